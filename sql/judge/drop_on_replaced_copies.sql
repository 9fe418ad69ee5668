-- After request copies were brought back to one (engine/dedupe_requests.sql, on a DuckLake warehouse where two
-- loaders stored one request at once), a judgment of an unpublished run built on the copy that went may no longer
-- read so in the stored request (another run's copy, asked of a model that answered otherwise, stayed). Such a
-- judgment goes to judgment_history ('request copy replaced') and leaves the run: its item is planned again, by its
-- run's next pass (the engine counts what is left after a pass on a lake) or by a resume, and derived from the
-- request that stayed. A published run's judgments are not touched (a published run was whole when its gate passed,
-- and copies are only made by runs still loading). Returns how many of the loader's own run went.
create or replace temp table judgments_on_copies as
select j.*
from judgments as j
inner join judge_runs as r on r.run_id = j.run_id
where r.status <> 'published'
  and exists (
      select 1 from deduped_request_ids as d
      where d.request_id = j.label_request_id
         or d.request_id = j.confidence_request_id
         or list_contains(coalesce(j.sample_request_ids, []), d.request_id)
  );

create or replace temp table underived_judgments as
select c.run_id, c.query_id, c.doc_id, c.personality, c.cot, c.confidence_method
from judgment_check('judgments_on_copies') as c
where not c.is_derivable;

insert into judgment_history
select j.run_id, j.query_id, j.doc_id, j.personality, j.cot, j.confidence_method, j.label, j.confidence, j.status,
       j.label_request_id, j.confidence_request_id, j.text_sha, j.judged_at, $replaced_at, 'request copy replaced'
from judgments_on_copies as j
inner join underived_judgments as u using (run_id, query_id, doc_id, personality, cot, confidence_method);

delete from judgments as j
where exists (
    select 1 from underived_judgments as u
    where u.run_id = j.run_id and u.query_id = j.query_id and u.doc_id = j.doc_id
      and u.personality = j.personality and u.cot = j.cot and u.confidence_method = j.confidence_method
);

select count(*) from underived_judgments where run_id = $run_id
