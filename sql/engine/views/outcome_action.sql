-- What the merge of a stage's staged outcome does (every LLM stage but judge, whose outcomes are re-derived from
-- their requests by judgment_check). Why: an outcome must agree with the stored request it references (a reading
-- only from an answer that read, a failure only from one that did not, an error only from a refusal); one that does
-- not (a concurrent run stored another answer first) is dropped and asked again from the stored answer. A stored
-- outcome is kept, except a stored failure asked again later (retry_failed): it is replaced, the old one kept in
-- the stage's history. Returns 'drop', 'failure asked again', 'keep' or 'new'.
create or replace macro outcome_action(
    request_parse_status, staged_status, staged_at, stored_found, stored_status, stored_at
) as
    case
        when request_parse_status is null then 'drop'
        when staged_status = 'ok' and request_parse_status <> 'ok' then 'drop'
        when staged_status = 'parse_failure' and request_parse_status <> 'parse_failure' then 'drop'
        when staged_status = 'error' and request_parse_status <> 'refused' then 'drop'
        when stored_status <> 'ok' and staged_at > stored_at then 'failure asked again'
        when stored_found then 'keep'
        else 'new'
    end
