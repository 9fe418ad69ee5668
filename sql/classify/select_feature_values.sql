-- The long form of the feature matrix: one row per pair and selected stream.
-- clf_selected_streams is registered by the caller (run_name, personality, cot, confidence_method, feature_key).
-- Parameters: collection_id.
with selected as (
    select * from clf_selected_streams
),

final as (
    select
        v.query_id,
        v.doc_id,
        v.relevance,
        s.feature_key,
        v.label,
        v.confidence,
        v.is_failure
    from clf_feature_values as v
    inner join selected as s
        on s.run_name = v.run_name
        and s.personality = v.personality
        and s.cot = v.cot
        and s.confidence_method = v.confidence_method
    where v.collection_id = $collection_id
)

select * from final
order by query_id, doc_id, feature_key
