-- One row per judgment of a pointwise run, joined to its human qrel: the input of every metric view.
-- Pairs a run judged that are not in the qrels are left out here (imports report them when loaded).
-- Only published runs count: a judge run whose quality gate failed (or that is still running) stays out.
-- Stale judgments (made on a query or passage text that a re-ingest has changed since) are not scored.
with runs as (
    select * from judge_runs where task_type = 'pointwise' and coalesce(status, 'published') = 'published'
),

final as (
    select
        j.run_id,
        r.run_name,
        r.source,
        r.collection_id,
        coalesce(r.subset_name, 'all') as subset_name,
        r.model,
        j.personality,
        j.cot,
        j.confidence_method,
        j.query_id,
        j.doc_id,
        q.relevance,
        j.label,
        j.confidence,
        j.expected_score,
        j.status,
        j.label is null as is_label_failure,
        j.confidence is null as is_confidence_missing
    from judgments as j
    inner join runs as r on r.run_id = j.run_id
    inner join qrels as q
        on q.collection_id = r.collection_id and q.query_id = j.query_id and q.doc_id = j.doc_id
    left join pair_texts as t
        on t.collection_id = r.collection_id and t.query_id = j.query_id and t.doc_id = j.doc_id
    where j.text_sha is null or j.text_sha = t.text_sha
)

select * from final
