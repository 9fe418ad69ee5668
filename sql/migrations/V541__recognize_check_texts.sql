-- The recognize stage (issue 33): the check set's expectations each recognize run was asked with
-- (tasks/recognize/check_set.py; texts written for PERAS), one row per text, owned by the run (its declaration's
-- owned_tables: deleted with it), read by the view recognize_check_scores. The stage's own tables come from its
-- declaration; this one is here so that it exists before any run is claimed or deleted.
create table if not exists recognize_check_texts (
    recognize_run_id varchar not null,  -- the recognize run (recognize_runs) that read the text
    text_id varchar not null,           -- the text's id in check_set.toml (its readings' query_id)
    dimension varchar not null,         -- the Big-Five dimension it shows, lower case
    level varchar not null,             -- the expected level: high, low or uncertain
    evidence_ids integer[] not null     -- the ids of the sentences that show it (empty when uncertain)
);
