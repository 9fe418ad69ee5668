-- The sufficient statistics of every metric: judgments counted per group x relevance x label x confidence.
-- A group is one run x collection/subset x model x personality x CoT setting x confidence method.
-- Every metric is a function of the multiset of (relevance, label, confidence) in its group, which these counts
-- keep whole; so the metric macros (*_from) read these tens of thousands of rows, not the millions of
-- judgments, and a view that needs several metrics scans the judgments once (see metrics_long).
-- label is null for a label parse failure, confidence null when missing: both stay here as their own cells so
-- that every metric can count them (n_label_failures, n_confidence_missing) without scoring them.
with facts as (
    select * from stg_judgment_facts
),

final as (
    select
        run_id, run_name, source, collection_id, subset_name, model, personality, cot, confidence_method,
        relevance,
        label,
        confidence,
        count(*) as n_judgments
    from facts
    group by all
)

select * from final
