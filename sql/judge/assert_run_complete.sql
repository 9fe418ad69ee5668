-- The judge's completeness check (replaces the engine's, sql/engine/stage/assert_run_complete.sql): every planned
-- judgment is there, each named, and no personality x CoT setting x method of the whole run (this call's or an
-- earlier one's: a narrower call cannot publish a run whose other judgments failed) fails to parse more often than
-- $max_share. One row per problem, ranked as the judge's other checks (the gate lists them by problem, detail).
with missing as (
    select 'missing judgment' as problem,
           format('{} {} {} cot={} {}', p.query_id, p.doc_id, s.personality, s.cot, s.confidence_method) as detail
    from planned_pairs as p
    cross join planned_settings as s
    anti join run_judgments as j
        on j.query_id = p.query_id and j.doc_id = p.doc_id and j.personality = s.personality and j.cot = s.cot
       and j.confidence_method = s.confidence_method
),

failure_share as (
    select 'parse failures above threshold' as problem,
           format('{} cot={} {}: {} of {} failed ({:.1f}% > {:.1f}%)', personality, cot, confidence_method,
                  count(*) filter (where status != 'ok'), count(*),
                  100.0 * count(*) filter (where status != 'ok') / count(*), 100.0 * $max_share) as detail
    from run_judgments
    group by personality, cot, confidence_method
    having count(*) filter (where status != 'ok') > $max_share * count(*)
)

select problem, detail, 1 as rank from missing
union all select problem, detail, 1 as rank from failure_share
