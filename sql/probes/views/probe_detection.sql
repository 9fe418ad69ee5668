-- needs: probe_sets, probe_docs
-- How well a signal separates a kind's copies from the clean copies they are compared with: the area under the ROC
-- curve (Mann-Whitney: ties count one half; rank-based, equal to scikit-learn's roc_auc_score), per run, kind,
-- signal, personality ('all' for persona_disagreement), CoT and confidence method. 0.5 is chance; null when one side
-- is empty.
--   signal       'low_confidence' or 'persona_disagreement' (probe_detection_scores)
--   n_attacked   copies of the kind with a score
--   n_clean      clean copies with a score
--   auroc        P(score of a copy > score of a clean copy), ties one half
with scores as (
    select * from probe_detection_scores
),

ranked as (
    select
        *,
        rank() over (partition by run_id, kind, signal, personality, cot, confidence_method order by score)
        + (count(*) over (partition by run_id, kind, signal, personality, cot, confidence_method, score) - 1) / 2.0
            as mid_rank
    from scores
),

counted as (
    select
        run_id,
        run_name,
        kind,
        signal,
        personality,
        cot,
        confidence_method,
        count(*) filter (where is_attacked = 1) as n_attacked,
        count(*) filter (where is_attacked = 0) as n_clean,
        sum(mid_rank) filter (where is_attacked = 1) as rank_sum
    from ranked
    group by all
),

final as (
    select
        * exclude (rank_sum),
        case
            when n_attacked > 0 and n_clean > 0
                then (rank_sum - n_attacked * (n_attacked + 1) / 2.0) / (n_attacked * n_clean)
        end as auroc
    from counted
)

select * from final
