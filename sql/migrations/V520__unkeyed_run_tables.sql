-- peras: file-only
-- Issue 13 (memory flat with the run): llm_requests and judgments lose their PRIMARY KEY. DuckDB keeps a key's
-- index (ART) whole in memory once a write touches the table and writes it whole at every checkpoint, so each
-- shard load of a judge run cost memory in proportion to everything ever judged in the warehouse (~30 MB per
-- 100k requests measured on llm_requests alone, more with every run; docs/scaling.md, "Memory"). Uniqueness stays
-- guaranteed where it always was enforced first: one writer loads at a time (the file's lock), the merges insert
-- only what is missing (sql/engine/merge_requests.sql, sql/judge/merge_outcomes.sql), and the judge gate refuses a
-- request or judgment stored twice (sql/judge/assert_run_valid.sql) -- exactly as on a DuckLake warehouse, which
-- never had keys (so this migration does not run there). Columns, their order, NOT NULL and CHECKs are kept.
create table llm_requests_unkeyed (
    request_id varchar not null, model varchar not null, backend varchar not null, prompt_hash varchar not null,
    purpose varchar not null, params json not null, messages json not null, raw_text varchar,
    attempts integer not null, attempt_texts json not null, parsed_value double, parse_status varchar not null,
    parse_reason varchar, logprobs json, prompt_tokens integer, completion_tokens integer, cached_tokens integer,
    latency_ms double, created_at timestamp not null, run_id varchar, http_requests integer,
    parsed_confidence double, attempt_params json
);
insert into llm_requests_unkeyed select * from llm_requests;
drop table llm_requests;
alter table llm_requests_unkeyed rename to llm_requests;

create table judgments_unkeyed (
    run_id varchar not null, query_id varchar not null, doc_id varchar not null, personality varchar not null,
    cot boolean not null, confidence_method varchar not null, label integer check (label between 0 and 3),
    confidence double check (confidence between 0 and 100), expected_score double, status varchar not null,
    reason varchar, label_request_id varchar, confidence_request_id varchar, judged_at timestamp not null,
    text_sha varchar, sample_request_ids varchar[], label_dist double[], p_label double, missing_labels integer[],
    label_mass double, label_token_index integer
);
insert into judgments_unkeyed select * from judgments;
drop table judgments;
alter table judgments_unkeyed rename to judgments;
