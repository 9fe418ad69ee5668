-- The fuser's labels for the pairs of a judge run: those of the latest published fuse run that fuses streams of
-- that run (fuse_judges.run_name), readable answers only; its name comes first, so no rows and no name means none.
with latest as (
    select f.fuse_run_id, f.run_name
    from fuse_runs as f
    where f.status = 'published'
      and exists (select 1 from fuse_judges as j where j.fuse_run_id = f.fuse_run_id and j.run_name = $run_name)
    order by f.created_at desc
    limit 1
),

final as (
    select l.run_name as fuse_run_name, a.query_id, a.doc_id, a.label::bigint as relevance, a.confidence
    from fuse_answers as a
    inner join latest as l using (fuse_run_id)
    where a.status = 'ok' and a.label is not null
)

select * from final order by query_id, doc_id
