-- A judge run by name, with its collection's probe set (null source: not a probe collection), its status, and
-- whether it last finished before the probe collection was built again (it judged an earlier build).
select
    r.run_id,
    r.run_name,
    r.collection_id,
    s.source_collection_id,
    coalesce(r.status, 'published') as status,
    coalesce(r.finished_at < s.built_at, false) as is_before_build,
    s.built_at
from judge_runs as r
left join probe_sets as s on s.collection_id = r.collection_id
where r.run_name = $run_name
