-- pairwise_vs_pointwise per pairwise run x personality x prompt x judge run x CoT x confidence method:
--   agreement           answers whose pairwise preference equals the pointwise one / answers
--   pointwise_accuracy  pointwise preference = the better passage ('tie' included) / answers
--   pairwise_accuracy   pairwise preference = the better passage / answers (the same answers)
--   judge_run_id  the pointwise judge run (judge_runs.run_id) whose labels are compared
--   judge_run_name  its name
--   n_answers  pairwise answers compared
with compared as (
    select * from pairwise_vs_pointwise
),

final as (
    select
        pairwise_run_id, run_name, collection_id, personality, prompt, judge_run_id, judge_run_name, cot, confidence_method,
        count(*) as n_answers,
        avg((pairwise_doc_id = pointwise_doc_id)::integer) as agreement,
        avg((pointwise_doc_id = better_doc_id)::integer) as pointwise_accuracy,
        avg((pairwise_doc_id = better_doc_id)::integer) as pairwise_accuracy
    from compared
    group by all
)

select * from final
