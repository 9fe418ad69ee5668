-- Issue 53: what an export's labels were asked with, for its ir_metadata header: the judge run and the distinct
-- request parameters of the label requests behind its judgments of one CoT setting and confidence method.
with

run as (
    select run_name, collection_id, subset_name, source, model, backend, params::varchar as run_params
    from judge_runs
    where run_id = $run_id
),

label_requests as (
    select distinct r.params::varchar as label_params
    from judgments as j
    join llm_requests as r on r.request_id = j.label_request_id
    where j.run_id = $run_id and j.cot = $cot and j.confidence_method = $confidence_method
),

final as (
    select run.*, (select list(label_params order by label_params) from label_requests) as label_params
    from run
)

select * from final
