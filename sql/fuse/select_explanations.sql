-- The CoT judgments' explanations (their label answer's text) of the chosen judge streams on a collection: what the
-- fuser is shown beside each judge's label and confidence (tasks/fuse/prompt.py). Streams without CoT have none.
-- fuse_selected_judges is registered by the caller (run_name, personality, cot, confidence_method, feature_key).
-- Parameters: collection_id.
with selected as (
    select * from fuse_selected_judges where cot
),

final as (
    select j.query_id, j.doc_id, s.feature_key, r.raw_text as explanation
    from selected as s
    inner join judge_runs as runs on runs.run_name = s.run_name and runs.collection_id = $collection_id
    inner join judgments as j
        on j.run_id = runs.run_id and j.personality = s.personality and j.cot = s.cot
       and j.confidence_method = s.confidence_method
    inner join llm_requests as r on r.request_id = j.label_request_id
)

select * from final
