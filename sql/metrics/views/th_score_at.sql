-- th_score_at(eps, cells): the TH-Score of each group for tails of width eps (a fraction of the 0-100
-- confidence scale, default 0.1), over judgments with a label and a confidence:
--   high tail: confidence >= 100 - 100 eps; a judgment there is a hit when its label equals the relevance
--   low tail:  confidence <= 100 eps; a judgment there is a hit when its label is wrong (a judge that says it
--              is almost surely wrong, and is wrong, was right about itself)
--   th_acc_*   hits / judgments in the tail (null for an empty tail)
--   th_share_* judgments in the tail / n_scored_confidence, in percent
--   th_score   th_interval_score(th_acc_high, th_share_high) + th_interval_score(th_acc_low, th_share_low)
-- Usage: select * from th_score_at(0.05). eps must be in (0, 0.5), so that the tails do not overlap.
create or replace macro th_score_at(eps := 0.1, cells := 'metrics_cells') as table
with th_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'th_input')
),

tails as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        sum(n_judgments) as n_scored,
        coalesce(sum(n_judgments) filter (where confidence >= 100 - 100 * eps), 0) as n_high,
        coalesce(sum(n_judgments) filter (where confidence >= 100 - 100 * eps and label = relevance), 0)
            as n_high_hits,
        coalesce(sum(n_judgments) filter (where confidence <= 100 * eps), 0) as n_low,
        coalesce(sum(n_judgments) filter (where confidence <= 100 * eps and label <> relevance), 0) as n_low_hits
    from th_input
    where label is not null and confidence is not null
    group by all
),

rates as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        n_high,
        case when n_high > 0 then n_high_hits / n_high end as acc_high,
        100 * n_high / n_scored as share_high,
        n_low,
        case when n_low > 0 then n_low_hits / n_low end as acc_low,
        100 * n_low / n_scored as share_low
    from tails
),

final as (
    select
        groups.* exclude (n_judgments, n_label_failures, n_confidence_missing, n_scored),
        (case when eps > 0 and eps < 0.5 then eps else error('th_score_at: eps must be in (0, 0.5)') end)::double
            as th_epsilon,
        rates.n_high::bigint as th_n_high,
        rates.acc_high::double as th_acc_high,
        rates.share_high::double as th_share_high,
        rates.n_low::bigint as th_n_low,
        rates.acc_low::double as th_acc_low,
        rates.share_low::double as th_share_low,
        (th_interval_score(rates.acc_high, rates.share_high) + th_interval_score(rates.acc_low, rates.share_low))
            ::double as th_score
    from groups
    inner join rates using (run_id, personality, cot, confidence_method)
)

select * from final
