-- Merge staged fuser answers (requests are merged first), each as outcome_action says (sql/engine/views): dropped if it
-- contradicts its stored request, kept if stored, replaced if a stored failure was asked again (the old one kept in
-- fuse_answer_history), else new. Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    outcome_action(
        s.request_parse_status, s.status, s.judged_at, a.fuse_run_id is not null, a.status, a.judged_at
    ) as action
from staged_checked as s
left join fuse_answers as a on a.fuse_run_id = s.run_id and a.query_id = s.query_id and a.doc_id = s.doc_id;

insert into fuse_answer_history
select a.fuse_run_id, a.query_id, a.doc_id, a.judge_order, a.label, a.confidence, a.status, a.reason, a.request_id,
       a.judged_at, $replaced_at, m.action
from fuse_answers as a
inner join outcome_merge as m on m.run_id = a.fuse_run_id and m.query_id = a.query_id and m.doc_id = a.doc_id
where m.action = 'failure asked again';

delete from fuse_answers as a
using outcome_merge as m
where m.action = 'failure asked again'
  and m.run_id = a.fuse_run_id and m.query_id = a.query_id and m.doc_id = a.doc_id;

insert into fuse_answers (
    fuse_run_id, query_id, doc_id, judge_order, label, confidence, status, reason, request_id, judged_at
)
select run_id, query_id, doc_id, judge_order, label, confidence, status, reason, request_id, judged_at
from outcome_merge
where action in ('new', 'failure asked again');

select count(*) from outcome_merge where action = 'drop'
