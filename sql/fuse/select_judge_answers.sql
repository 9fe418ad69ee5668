-- The chosen judge streams' judgments on a collection, one row per pair and judge, with what the fuser is shown:
-- the label, the confidence and, for CoT judgments, the label answer's text as the explanation. The columns up to
-- is_failure are those classify's feature matrix is built from (tasks/classify/features.py).
-- fuse_selected_judges is registered by the caller (run_name, personality, cot, confidence_method, feature_key).
-- Parameters: collection_id.
with selected as (
    select * from fuse_selected_judges
),

final as (
    select
        v.query_id,
        v.doc_id,
        v.relevance,
        s.feature_key,
        v.label,
        v.confidence,
        v.is_failure,
        case when j.cot then r.raw_text end as explanation
    from clf_feature_values as v
    inner join selected as s
        on s.run_name = v.run_name
        and s.personality = v.personality
        and s.cot = v.cot
        and s.confidence_method = v.confidence_method
    inner join judgments as j
        on j.run_id = v.run_id and j.query_id = v.query_id and j.doc_id = v.doc_id
        and j.personality = v.personality and j.cot = v.cot and j.confidence_method = v.confidence_method
    left join llm_requests as r on r.request_id = j.label_request_id
    where v.collection_id = $collection_id
)

select * from final
order by query_id, doc_id, feature_key
