-- agreement_from(cells): agreement of each group's labels with the human qrels, over the judgments that have
-- a label (n_scored). Label parse failures are excluded and counted in n_label_failures, never scored.
--
-- n_ij = judgments with relevance i and label j, N = sum n_ij, row_i and col_j its marginals:
--   accuracy            sum_i n_ii / N
--   cohen_kappa         1 - N (N - sum_i n_ii) / (N^2 - sum_k row_k col_k)
--   qwk                 1 - N sum (i-j)^2 n_ij / sum_{i,j} (i-j)^2 row_i col_j    (weights on the values 0..3)
--   kappa_bin_*         Cohen's kappa once both sides are cut in two: 0|123 (>= 1), 01|23 (>= 2), 012|3 (= 3)
--   macro_f1            mean over the four levels 0..3 of F1_k = 2 n_kk / (row_k + col_k), F1_k = 0 for a level
--                       neither side used: scikit-learn's f1_score(labels=[0, 1, 2, 3], average='macro',
--                       zero_division=0), the one definition PERAS uses everywhere (classify too)
--   krippendorff_alpha  ordinal alpha, two coders (human, judge) per pair, n_k = row_k + col_k:
--                       1 - (2N - 1) 2 sum_{i,j} n_ij d_ij / sum_{c,k} n_c n_k d_ck,
--                       d_ck = (sum_{g between c and k} n_g - (n_c + n_k) / 2)^2
-- Degenerate groups get null, never a division by zero:
--   - kappa, qwk, kappa_bin_*: the denominator is 0 exactly when human and judge both used one and the same
--     class (agreement that cannot be told from chance); scikit-learn returns nan there. A judge that always
--     says 2 against varied qrels has a defined kappa of 0.
--   - krippendorff_alpha: null when a single level occurs among both coders (the `krippendorff` package
--     refuses such data).
--   - everything is null when n_scored = 0 (an empty group, or every label failed to parse).
-- Denominators are exact integers, compared with 0 before dividing.
create or replace macro agreement_from(cells := 'metrics_cells') as table
with agreement_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'agreement_input')
),

labelled as (
    select run_id, personality, cot, confidence_method, relevance, label, sum(n_judgments)::hugeint as n
    from agreement_input
    where label is not null
    group by all
),

levels as (
    select unnest(range(4))::integer as level
),

-- per group and level: how often the humans gave it, the judge gave it, and both gave it to the same pair
level_counts as (
    select
        labelled.run_id,
        labelled.personality,
        labelled.cot,
        labelled.confidence_method,
        levels.level,
        coalesce(sum(labelled.n) filter (where labelled.relevance = levels.level), 0) as n_true,
        coalesce(sum(labelled.n) filter (where labelled.label = levels.level), 0) as n_pred,
        coalesce(sum(labelled.n) filter (where labelled.relevance = levels.level and labelled.label = levels.level), 0)
            as n_both
    from labelled
    cross join levels
    group by all
),

totals as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        sum(n) as n,
        coalesce(sum(n) filter (where relevance = label), 0) as n_agree,
        sum(n * (relevance - label) * (relevance - label)) as sq_disagreement,
        sum(n * relevance) as sum_true,
        sum(n * relevance * relevance) as sum_true_sq,
        sum(n * label) as sum_pred,
        sum(n * label * label) as sum_pred_sq,
        coalesce(sum(n) filter (where relevance >= 1), 0) as n_true_ge1,
        coalesce(sum(n) filter (where label >= 1), 0) as n_pred_ge1,
        coalesce(sum(n) filter (where (relevance >= 1) = (label >= 1)), 0) as n_agree_ge1,
        coalesce(sum(n) filter (where relevance >= 2), 0) as n_true_ge2,
        coalesce(sum(n) filter (where label >= 2), 0) as n_pred_ge2,
        coalesce(sum(n) filter (where (relevance >= 2) = (label >= 2)), 0) as n_agree_ge2,
        coalesce(sum(n) filter (where relevance >= 3), 0) as n_true_ge3,
        coalesce(sum(n) filter (where label >= 3), 0) as n_pred_ge3,
        coalesce(sum(n) filter (where (relevance >= 3) = (label >= 3)), 0) as n_agree_ge3
    from labelled
    group by all
),

level_sums as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        sum(n_true * n_pred) as chance_agree,
        -- a level with no support and no prediction counts 0, not left out: always divided by 4
        sum(case when n_true + n_pred > 0 then 2 * n_both / (n_true + n_pred) else 0 end) / 4 as macro_f1
    from level_counts
    group by all
),

-- Krippendorff's ordinal distance between levels c and k, from the counts n_g pooled over both coders
pooled as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        level,
        n_true + n_pred as n_pooled,
        sum(n_true + n_pred) over (
            partition by run_id, personality, cot, confidence_method order by level
        ) as n_pooled_through
    from level_counts
),

distances as (
    select
        c.run_id,
        c.personality,
        c.cot,
        c.confidence_method,
        c.level as level_c,
        k.level as level_k,
        c.n_pooled as n_c,
        k.n_pooled as n_k,
        -- sum of n_g for g from min(c, k) to max(c, k) = through(max) - through(min) + n(min)
        power(
            greatest(c.n_pooled_through, k.n_pooled_through) - least(c.n_pooled_through, k.n_pooled_through)
            + (case when c.level <= k.level then c.n_pooled else k.n_pooled end)
            - (c.n_pooled + k.n_pooled) / 2,
            2
        ) as distance
    from pooled as c
    inner join pooled as k using (run_id, personality, cot, confidence_method)
),

alpha_terms as (
    select
        distances.run_id,
        distances.personality,
        distances.cot,
        distances.confidence_method,
        sum(distances.n_c * distances.n_k * distances.distance) as expected_disagreement,
        sum(2 * coalesce(labelled.n, 0) * distances.distance) as observed_disagreement
    from distances
    left join labelled
        on labelled.run_id = distances.run_id
        and labelled.personality = distances.personality
        and labelled.cot = distances.cot
        and labelled.confidence_method = distances.confidence_method
        and labelled.relevance = distances.level_c
        and labelled.label = distances.level_k
    group by all
),

-- chance agreement of the binarised tables: both above the cut, or both below it
chance as (
    select
        totals.*,
        level_sums.chance_agree,
        level_sums.macro_f1,
        n * (sum_true_sq + sum_pred_sq) - 2 * sum_true * sum_pred as qwk_expected,
        n_true_ge1 * n_pred_ge1 + (n - n_true_ge1) * (n - n_pred_ge1) as chance_agree_ge1,
        n_true_ge2 * n_pred_ge2 + (n - n_true_ge2) * (n - n_pred_ge2) as chance_agree_ge2,
        n_true_ge3 * n_pred_ge3 + (n - n_true_ge3) * (n - n_pred_ge3) as chance_agree_ge3
    from totals
    inner join level_sums using (run_id, personality, cot, confidence_method)
),

metrics as (
    select
        chance.run_id,
        chance.personality,
        chance.cot,
        chance.confidence_method,
        n_agree / n as accuracy,
        cohen_kappa(n, n_agree, chance_agree) as cohen_kappa,
        case when qwk_expected <> 0
            then 1 - (n * sq_disagreement)::double / qwk_expected::double end as qwk,
        macro_f1,
        cohen_kappa(n, n_agree_ge1, chance_agree_ge1) as kappa_bin_0_123,
        cohen_kappa(n, n_agree_ge2, chance_agree_ge2) as kappa_bin_01_23,
        cohen_kappa(n, n_agree_ge3, chance_agree_ge3) as kappa_bin_012_3,
        case when expected_disagreement > 0
            then 1 - (2 * n - 1) * observed_disagreement / expected_disagreement end as krippendorff_alpha
    from chance
    inner join alpha_terms using (run_id, personality, cot, confidence_method)
),

final as (
    select
        groups.* exclude (n_confidence_missing, n_scored_confidence),
        metrics.accuracy::double as accuracy,
        metrics.cohen_kappa::double as cohen_kappa,
        metrics.qwk::double as qwk,
        metrics.macro_f1::double as macro_f1,
        metrics.kappa_bin_0_123::double as kappa_bin_0_123,
        metrics.kappa_bin_01_23::double as kappa_bin_01_23,
        metrics.kappa_bin_012_3::double as kappa_bin_012_3,
        metrics.krippendorff_alpha::double as krippendorff_alpha
    from groups
    left join metrics using (run_id, personality, cot, confidence_method)
)

select * from final
