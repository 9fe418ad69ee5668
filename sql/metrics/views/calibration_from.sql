-- calibration_from(cells): calibration of each group's confidence, over the judgments with a label and a
-- confidence (N = n_scored_confidence). A judgment is correct when its label equals the human relevance;
-- p = confidence / 100 is the judge's stated probability of that.
--   accuracy   correct / N;  mean_p = mean p
--   ece        sum_b n_b / N |acc_b - mean_p_b| over 10 equal-width bins (calibration_bins_from)
--   mce        max_b |acc_b - mean_p_b| over the non-empty equal-width bins
--   ace        the same weighted sum over 10 adaptive (equal-mass) bins: with the group's judgments sorted by
--              confidence, a judgment's bin is floor(10 r / N), r = judgments with a strictly lower confidence.
--              Tied confidences therefore never straddle two bins (a bin may hold more or less than N / 10, or
--              nothing; n_ace_bins counts the non-empty ones) and ace does not depend on ids or row order.
--   brier      mean (p - correct)^2
--   nll        - mean [correct ln p' + (1 - correct) ln (1 - p')], p' = p clipped to [1e-6, 1 - 1e-6]
--   th_*       TH-Score at eps = 0.1 (th_score_at.sql; `select * from th_score_at(0.05)` for other widths)
-- Every metric is null when N = 0; failures are counted in n_label_failures and n_confidence_missing.
create or replace macro calibration_from(cells := 'metrics_cells') as table
with calibration_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'calibration_input')
),

th as (
    select * from th_score_at(0.1, cells := 'calibration_input')
),

scored as (
    select
        *,
        least(greatest(confidence / 100, 1e-6::double), 1 - 1e-6::double) as p_clipped
    from confidence_counts_from(cells := 'calibration_input')
),

equal_width as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        least(floor(confidence / 10), 9) as bin,
        sum(n) as n,
        sum(n_correct) as n_correct,
        sum(n * confidence / 100) as sum_p
    from scored
    group by all
),

ranked as (
    select
        *,
        coalesce(sum(n) over (
            partition by run_id, personality, cot, confidence_method order by confidence
            rows between unbounded preceding and 1 preceding
        ), 0) as n_below,
        sum(n) over (partition by run_id, personality, cot, confidence_method) as n_group
    from scored
),

equal_mass as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        (10 * n_below::hugeint) // n_group::hugeint as bin,
        sum(n) as n,
        sum(n_correct) as n_correct,
        sum(n * confidence / 100) as sum_p
    from ranked
    group by all
),

ece as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        sum(abs(n_correct - sum_p)) / sum(n) as ece,
        max(abs(n_correct - sum_p) / n) as mce
    from equal_width
    group by all
),

ace as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        sum(abs(n_correct - sum_p)) / sum(n) as ace,
        count(*) as n_ace_bins
    from equal_mass
    group by all
),

scores as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        sum(n_correct) / sum(n) as accuracy,
        sum(n * confidence / 100) / sum(n) as mean_p,
        sum(n_correct * power(1 - confidence / 100, 2) + (n - n_correct) * power(confidence / 100, 2))
            / sum(n) as brier,
        -sum(n_correct * ln(p_clipped) + (n - n_correct) * ln(1 - p_clipped)) / sum(n) as nll
    from scored
    group by all
),

final as (
    select
        groups.* exclude (n_scored),
        scores.accuracy::double as accuracy,
        scores.mean_p::double as mean_p,
        ece.ece::double as ece,
        ace.ace::double as ace,
        ace.n_ace_bins::bigint as n_ace_bins,
        ece.mce::double as mce,
        scores.brier::double as brier,
        scores.nll::double as nll,
        th.th_epsilon,
        th.th_n_high,
        th.th_acc_high,
        th.th_share_high,
        th.th_n_low,
        th.th_acc_low,
        th.th_share_low,
        th.th_score
    from groups
    left join scores using (run_id, personality, cot, confidence_method)
    left join ece using (run_id, personality, cot, confidence_method)
    left join ace using (run_id, personality, cot, confidence_method)
    left join th using (run_id, personality, cot, confidence_method)
)

select * from final
