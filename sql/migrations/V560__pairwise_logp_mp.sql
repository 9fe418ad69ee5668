-- peras: file-only
-- Pairwise LogP and MP (issue 32): the prompts 'logp' and 'mp' ask the overconfidence study's MP and LogP template
-- (peras/prompts/mp_logp_pairwise.toml), so pairwise_answers' CHECK on prompt admits them. DuckDB cannot alter a
-- CHECK: the table is copied into one with the wider check (columns, their order, NOT NULL, the key and the other
-- CHECKs kept). A DuckLake warehouse has no CHECKs (this migration does not run there).
alter table pairwise_answers rename to pairwise_answers_v450;

-- One row per drawn pair (doc_1, doc_2) shown in one order under one personality and prompt: the answer read (for
-- 'mp', the majority of its 10 samples), or the failure and why.
create table if not exists pairwise_answers (
    pairwise_run_id varchar not null,          -- the run (pairwise_runs)
    query_id        varchar not null,
    doc_1           varchar not null,          -- passage A in the 'AB' order, B in 'BA'
    doc_2           varchar not null,          -- passage B in the 'AB' order, A in 'BA'
    relevance_1     integer not null,          -- qrels grade of doc_1 when drawn
    relevance_2     integer not null,          -- qrels grade of doc_2 when drawn
    personality     varchar not null,
    prompt          varchar not null check (prompt in ('certainty', 'tie', 'self', 'logp', 'mp')),  -- the prompt
    -- asked: 'certainty', 'tie' (peras/prompts/pairwise_*), 'self' (self_pairwise), 'logp', 'mp' (mp_logp_pairwise)
    position        varchar not null check (position in ('AB', 'BA')),  -- 'AB': doc_1 shown as A; 'BA': doc_2
    choice          varchar check (choice in ('A', 'B', 'C')),  -- the position chosen; null unless status 'ok'
    confidence      double,                    -- 0-100: the certainty 1-100 ('certainty'), the confidence_score
    -- ('self'), the chosen option's probability over the two options x 100 ('logp'), the share of the 10 samples
    -- that chose it x 100 ('mp'); null for 'tie'
    status          varchar not null,          -- 'ok', 'parse_failure', 'error', 'logprob_failure' ('logp': the
    -- answer read, but its option letter is not among the log-probabilities)
    reason          varchar,                   -- why, when status != 'ok'
    request_id      varchar,                   -- the llm_requests row ('mp': the first sample that chose the answer)
    judged_at       timestamp not null,
    primary key (pairwise_run_id, query_id, doc_1, doc_2, personality, prompt, position)
);
insert into pairwise_answers select * from pairwise_answers_v450;
drop table pairwise_answers_v450;
