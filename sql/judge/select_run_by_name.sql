-- One judge run by name: the columns of every stage's (sql/engine/stage/select_run_by_name.sql, in its order: `peras
-- batch` reads them by position), then what only a judge run has and `peras runs show|delete` name it by: the
-- collection and subset it judged and its source (judged here, 'llm', or imported).
select
    'judge' as kind, r.run_id, r.run_name, r.model, r.backend, r.status, r.status_reason, r.created_at, r.finished_at,
    r.params,
    (select count(*) from judgments as j where j.run_id = r.run_id) as n_items,
    (select count(*) from judgments as j where j.run_id = r.run_id and j.status <> 'ok') as n_failures,
    r.collection_id,
    r.subset_name,
    r.source
from judge_runs as r
where r.run_name = $run_name
