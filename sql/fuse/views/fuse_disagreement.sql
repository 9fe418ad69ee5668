-- The study's disagreement chart for each published fuse run with a fuser: on the pairs where the fuser and majority
-- voting give different labels, how often the fuser was right (and the vote wrong), the vote right (and the fuser
-- wrong), or both wrong. Fuser failures are left out (they have no label).
--   n_fused           pairs the fuser answered readably
--   n_disagree        of those, pairs where the fuser's label differs from the majority vote's
--   n_fuser_right     disagreeing pairs where the fuser gave the qrels grade
--   n_majority_right  disagreeing pairs where the majority vote gave the qrels grade
--   n_both_wrong      disagreeing pairs where neither did
with pairs as (
    select a.fuse_run_id, r.run_name, r.collection_id, r.model, a.label as fuser_label, v.label as majority_label, v.relevance
    from fuse_answers as a
    inner join fuse_votes as v
        on v.fuse_run_id = a.fuse_run_id and v.query_id = a.query_id and v.doc_id = a.doc_id
       and v.method = 'vote_majority'
    inner join fuse_runs_published as r on r.fuse_run_id = a.fuse_run_id
    where a.status = 'ok'
),

final as (
    select
        fuse_run_id,
        run_name,
        collection_id,
        model,
        count(*) as n_fused,
        count(*) filter (where fuser_label <> majority_label) as n_disagree,
        count(*) filter (where fuser_label <> majority_label and fuser_label = relevance) as n_fuser_right,
        count(*) filter (where fuser_label <> majority_label and majority_label = relevance) as n_majority_right,
        count(*) filter (
            where fuser_label <> majority_label and fuser_label <> relevance and majority_label <> relevance
        ) as n_both_wrong
    from pairs
    group by all
)

select * from final
