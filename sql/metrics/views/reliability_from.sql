-- reliability_from(cells): confidence reliability (Sakai): how much confidence a judge spends on wrong labels
-- (overconfidence) and withholds from right ones (underconfidence), over judgments with a label and a confidence.
--   p(i) = confidence / 100;  I+ = judgments whose label equals the human relevance, I- = the rest
--   overconfidence  O = sum over I- of p(i)          ro = 1 - O / |I-|   (1 when I- is empty)
--   underconfidence U = sum over I+ of (1 - p(i))    ru = 1 - U / |I+|   (1 when I+ is empty)
--   hmr = 2 ro ru / (ro + ru)                        (0 when ro + ru = 0)
-- Label failures and judgments without a confidence are counted (n_label_failures, n_confidence_missing),
-- not scored. A group with nothing to score (n_scored_confidence = 0) has null metrics.
create or replace macro reliability_from(cells := 'metrics_cells') as table
with reliability_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'reliability_input')
),

scored as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        label = relevance as is_correct,
        confidence / 100 as p,
        n_judgments as n
    from reliability_input
    where label is not null and confidence is not null
),

sums as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        coalesce(sum(n) filter (where is_correct), 0) as n_correct,
        coalesce(sum(n) filter (where not is_correct), 0) as n_incorrect,
        coalesce(sum(n * p) filter (where not is_correct), 0) as overconfidence,
        coalesce(sum(n * (1 - p)) filter (where is_correct), 0) as underconfidence
    from scored
    group by all
),

ratios as (
    select
        *,
        case when n_incorrect > 0 then 1 - overconfidence / n_incorrect else 1 end as ro,
        case when n_correct > 0 then 1 - underconfidence / n_correct else 1 end as ru
    from sums
),

final as (
    select
        groups.* exclude (n_scored),
        ratios.n_correct::bigint as n_correct,
        ratios.n_incorrect::bigint as n_incorrect,
        ratios.overconfidence::double as overconfidence,
        ratios.underconfidence::double as underconfidence,
        ratios.ro::double as ro,
        ratios.ru::double as ru,
        (case when ro + ru > 0 then 2 * ro * ru / (ro + ru) when ro + ru = 0 then 0 end)::double as hmr
    from groups
    left join ratios using (run_id, personality, cot, confidence_method)
)

select * from final
