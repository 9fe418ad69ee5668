-- Why: a judge run publishes only if every planned item has a stored result or recorded failure, values are
-- in range, and no personality fails to parse more often than the threshold. Returns one row per problem.
with judged as (
    select * from judgments where run_id = $run_id
),

missing as (
    select 'missing judgments' as problem,
           format('{} of {} planned items have no stored result', $n_planned - count(*), $n_planned) as detail
    from judged
    having count(*) < $n_planned
),

out_of_range as (
    select 'value out of range' as problem,
           format('{} {} cot={} {}: label={} confidence={}', query_id, doc_id, cot, personality, label,
                  confidence) as detail
    from judged
    where (label is not null and label not between 0 and 3)
       or (confidence is not null and confidence not between 0 and 100)
       or (status = 'ok' and (label is null or confidence is null))
),

failure_share as (
    select 'parse failures above threshold' as problem,
           format('{} cot={} {}: {} of {} failed ({:.1f}% > {:.1f}%)', personality, cot, confidence_method,
                  count(*) filter (where status != 'ok'), count(*),
                  100.0 * count(*) filter (where status != 'ok') / count(*), 100.0 * $max_share) as detail
    from judged
    group by personality, cot, confidence_method
    having count(*) filter (where status != 'ok') > $max_share * count(*)
),

final as (
    select * from missing
    union all select * from out_of_range
    union all select * from failure_share
)

select * from final order by problem, detail
