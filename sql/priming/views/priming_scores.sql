-- One row per passage of every parsed priming batch: its position, part (prologue or epilogue), human qrel
-- and the model's score. Failed batches have no rows here (see priming_batches.status and reason).
with runs as (
    select priming_run_id, run_name, collection_id, model from priming_runs
),

parsed as (
    select * from priming_batches where status = 'ok'
),

passages as (
    select
        b.priming_run_id, r.run_name, r.collection_id, r.model, b.query_id, b.trial, b.n_prologue, b.n_epilogue,
        b.personality, b.condition,
        unnest(generate_series(1, len(b.doc_ids))) as position,
        unnest(b.doc_ids) as doc_id,
        unnest(b.scores) as score
    from parsed as b
    inner join runs as r using (priming_run_id)
),

final as (
    select
        p.*,
        case when p.position <= p.n_prologue then 'prologue' else 'epilogue' end as part,
        q.relevance
    from passages as p
    left join qrels as q on q.collection_id = p.collection_id and q.query_id = p.query_id and q.doc_id = p.doc_id
)

select * from final
