-- The check set's expectations each recognize run was asked with (tasks/recognize/check_set.py; written for PERAS):
-- one row per text, owned by the run (deleted with it), read by the view recognize_check_scores.
create table if not exists recognize_check_texts (
    recognize_run_id varchar not null,
    text_id varchar not null,
    dimension varchar not null,
    level varchar not null,
    evidence_ids integer[] not null
)
