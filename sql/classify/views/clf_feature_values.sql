-- One row per judgment that can feed the classifier: a pair, one judgment stream
-- (run x personality x CoT x confidence method), its label and confidence, and the human qrel.
-- is_failure: the stream gave no usable value for this pair (no label, or no confidence
-- where the stream has confidences); such pairs are left out of the feature matrix and counted.
with facts as (
    select * from stg_judgment_facts
),

final as (
    select
        run_id,
        run_name,
        source,
        collection_id,
        model,
        personality,
        cot,
        confidence_method,
        confidence_method <> 'none' as has_confidence,
        query_id,
        doc_id,
        relevance,
        label,
        confidence,
        label is null or (confidence_method <> 'none' and confidence is null) as is_failure
    from facts
)

select * from final
