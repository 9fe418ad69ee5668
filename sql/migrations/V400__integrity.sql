-- Data integrity (issue 14): every warehouse has an identity that its shards carry; every request row says which
-- run created it and how many HTTP requests it cost; answers that are replaced (a failure re-asked, a duplicate
-- answer from a concurrent run) are kept in history tables; judgments remember the texts they were made on.

create table if not exists warehouse_identity (
    warehouse_id    varchar primary key,       -- random, set once: shards are written under it and carry it
    created_at      timestamp not null
);

insert into warehouse_identity
select replace(cast(gen_random_uuid() as varchar), '-', ''), cast(now() as timestamp)
where not exists (select 1 from warehouse_identity);

alter table llm_requests add column if not exists run_id varchar;           -- the run whose engine stored it
alter table llm_requests add column if not exists http_requests integer;    -- HTTP requests it cost (retries too)

create table if not exists llm_request_history (
    request_id          varchar not null,
    run_id              varchar,               -- the run that sent this answer
    raw_text            varchar,
    attempt_texts       json,
    parsed_value        double,
    parse_status        varchar not null,
    parse_reason        varchar,
    http_requests       integer,
    created_at          timestamp not null,
    replaced_at         timestamp not null,
    why                 varchar not null       -- 'failure re-asked', 'duplicate answer (the stored one is kept)', 'no answer (the request failed)'
);

alter table judgments add column if not exists text_sha varchar;             -- of the query and passage texts
alter table judgments add column if not exists sample_request_ids varchar[]; -- sampling: every vote's request

create table if not exists judgment_history (
    run_id                  varchar not null,
    query_id                varchar not null,
    doc_id                  varchar not null,
    personality             varchar not null,
    cot                     boolean not null,
    confidence_method       varchar not null,
    label                   integer,
    confidence              double,
    status                  varchar not null,
    label_request_id        varchar,
    confidence_request_id   varchar,
    text_sha                varchar,
    judged_at               timestamp not null,
    replaced_at             timestamp not null,
    why                     varchar not null   -- 'text changed', 'failure asked again', 'request copy replaced' (a lake)
);

alter table judge_runs add column if not exists status_reason varchar;     -- why a run failed
alter table priming_runs add column if not exists status_reason varchar;
