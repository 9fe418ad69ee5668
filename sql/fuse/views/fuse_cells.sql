-- Every fused answer of a published fuse run shaped like metrics_cells, so that the metric macros score them
-- (`select * from long_from(cells := 'fuse_cells')`): the fuser ('fuser'), each baseline ('vote_majority', ...)
-- and each judge alone (its name in fuse_judges: 'default', 'HA', ... or a stream key), all on the same pairs
-- (fuse_runs_published: the pairs asked of the fuser, else all). personality holds the method or judge; cot is
-- false and confidence_method 'fuse' for all, so that a run's rows form one comparison. A fuser failure has a null
-- label: counted (n_label_failures), never scored.
with runs as (
    select * from fuse_runs_published
),

pairs as (
    select distinct v.fuse_run_id, v.query_id, v.doc_id, v.relevance
    from fuse_votes as v
    inner join runs as r using (fuse_run_id)
    where not r.has_fuser
       or exists (
           select 1 from fuse_answers as a
           where a.fuse_run_id = v.fuse_run_id and a.query_id = v.query_id and a.doc_id = v.doc_id
       )
),

votes as (
    select p.fuse_run_id, v.method, p.relevance, v.label, v.confidence
    from pairs as p
    inner join fuse_votes as v using (fuse_run_id, query_id, doc_id)
),

fuser as (
    select p.fuse_run_id, 'fuser' as method, p.relevance, a.label, a.confidence
    from pairs as p
    inner join fuse_answers as a using (fuse_run_id, query_id, doc_id)
),

singles as (
    select p.fuse_run_id, j.judge as method, p.relevance, f.label, f.confidence
    from pairs as p
    inner join fuse_judges as j using (fuse_run_id)
    inner join runs as r using (fuse_run_id)
    inner join clf_feature_values as f
        on f.collection_id = r.collection_id and f.run_name = j.run_name and f.personality = j.personality
       and f.cot = j.cot and f.confidence_method = j.confidence_method
       and f.query_id = p.query_id and f.doc_id = p.doc_id
),

answers as (
    select * from votes
    union all
    select * from fuser
    union all
    select * from singles
),

final as (
    select
        r.fuse_run_id as run_id,
        r.run_name,
        'fuse' as source,
        r.collection_id,
        'all' as subset_name,
        r.model,
        a.method as personality,
        false as cot,
        'fuse' as confidence_method,
        a.relevance,
        a.label,
        a.confidence,
        count(*) as n_judgments
    from answers as a
    inner join runs as r using (fuse_run_id)
    group by all
)

select * from final
