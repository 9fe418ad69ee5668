-- A judge run by name, with its collection's probe set (null source: not a probe collection) and status.
select
    r.run_id,
    r.run_name,
    r.collection_id,
    s.source_collection_id,
    coalesce(r.status, 'published') as status
from judge_runs as r
left join probe_sets as s on s.collection_id = r.collection_id
where r.run_name = $run_name
