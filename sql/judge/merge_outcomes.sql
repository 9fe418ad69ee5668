-- Merge staged judgments (requests are merged first): only judgments derivable from the stored requests go in
-- (the others are left out and asked again from the stored answers); a stored judgment made on texts that have
-- changed since, or a stored failure judged again (retry_failed), is replaced, the old one kept in
-- judgment_history. A judgment loaded again (the same shard twice) is kept as it is. Returns the number left out.
-- One row per staged judgment: on a DuckLake warehouse (no keys) a request two loaders stored at once has two copies
-- until the dedupe brings it back to one, and judgment_check yields a row per copy joined. A judgment goes in only if
-- it reads so in every copy stored (else it is asked again, from the copy that stays).
create or replace temp table outcome_check as
select run_id, query_id, doc_id, personality, cot, confidence_method, bool_and(is_derivable) as is_derivable
from judgment_check('staged_outcomes')
group by run_id, query_id, doc_id, personality, cot, confidence_method;

create or replace temp table outcome_merge as
select
    s.*,
    case
        when not c.is_derivable then 'drop'
        when j.run_id is null then 'new'
        when j.text_sha is distinct from s.text_sha and s.text_sha is not null then 'text changed'
        when j.status <> 'ok' and s.judged_at > j.judged_at then 'failure asked again'
        else 'keep'
    end as action
from staged_outcomes as s
inner join outcome_check as c using (run_id, query_id, doc_id, personality, cot, confidence_method)
left join judgments as j using (run_id, query_id, doc_id, personality, cot, confidence_method);

insert into judgment_history
select j.run_id, j.query_id, j.doc_id, j.personality, j.cot, j.confidence_method, j.label, j.confidence, j.status,
       j.label_request_id, j.confidence_request_id, j.text_sha, j.judged_at, $replaced_at, m.action
from judgments as j
inner join outcome_merge as m using (run_id, query_id, doc_id, personality, cot, confidence_method)
where m.action in ('text changed', 'failure asked again');

update judgments as j
set label = m.label, confidence = m.confidence, expected_score = m.expected_score, status = m.status,
    reason = m.reason, label_request_id = m.label_request_id, confidence_request_id = m.confidence_request_id,
    judged_at = m.judged_at, text_sha = m.text_sha, sample_request_ids = m.sample_request_ids,
    label_dist = m.label_dist, p_label = m.p_label, missing_labels = m.missing_labels, label_mass = m.label_mass,
    label_token_index = m.label_token_index
from outcome_merge as m
where m.action in ('text changed', 'failure asked again')
  and j.run_id = m.run_id and j.query_id = m.query_id and j.doc_id = m.doc_id
  and j.personality = m.personality and j.cot = m.cot and j.confidence_method = m.confidence_method;

insert into judgments (
    run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence, expected_score, status, reason,
    label_request_id, confidence_request_id, judged_at, text_sha, sample_request_ids, label_dist, p_label,
    missing_labels, label_mass, label_token_index
)
select
    run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence, expected_score, status, reason,
    label_request_id, confidence_request_id, judged_at, text_sha, sample_request_ids, label_dist, p_label,
    missing_labels, label_mass, label_token_index
from outcome_merge
where action = 'new';

select count(*) from outcome_merge where action = 'drop'
