-- Rankings you can trust (issue 50): `peras trust` ranks run files under the human qrels and a judge run's labels,
-- puts bootstrap intervals on how alike the two rankings are, lists the pairs whose order flips and gives each
-- system an interval for its human score from a small human sample. One study per distinct set of inputs: a rerun
-- with the same inputs reads it back and computes nothing.

create table if not exists trust_studies (
    study_id        varchar primary key,       -- sha256 of everything that fixes the study (inputs, files' sha256, settings)
    collection_id   varchar not null,
    judge_run_id    varchar not null,          -- the judge run whose labels make the LLM qrels (judge_runs)
    labels          varchar not null,          -- whose labels: a personality code or an aggregate ('majority', 'fuser')
    cot             boolean not null,          -- the CoT setting of the labels
    confidence_method varchar not null,        -- the confidence method of the labels
    measure         varchar not null,          -- ir_measures name the systems are ranked by, e.g. 'nDCG@10'
    human_sample    varchar not null,          -- the sample asked for: a share ('5%', '0.05'), a count of pairs ('500') or a qrels file
    n_sample        integer not null,          -- human-labelled pairs in the sample
    n_pool          integer not null,          -- pairs of the judged pool (LLM-labelled pairs the human qrels judge too)
    replicates      integer not null,          -- bootstrap replicates over topics
    level           double not null,           -- the intervals' level, e.g. 0.90
    seed            bigint not null,           -- seeds the bootstrap and the sample
    dedupe          boolean not null,          -- true: one system of each near-duplicate group scored
    duplicates      json not null,             -- near-duplicate groups found (the same top 10 on every judged topic)
    systems         json not null,             -- {system: run file} of the systems ranked
    n_topics        integer not null,          -- topics the systems are ranked over
    created_at      timestamp not null
);

-- One row per study x qrels x system x topic: the measure's value ('all': the mean over topics).
create table if not exists trust_scores (
    study_id        varchar not null,          -- the study (trust_studies)
    qrels_name      varchar not null,          -- 'human' or 'llm'
    system          varchar not null,          -- the run's tag (its file's name where two files share a tag)
    query_id        varchar not null,          -- a topic, or 'all' for the mean over topics
    value           double,                    -- the measure's value
    primary key (study_id, qrels_name, system, query_id)
);

-- One row per study x statistic: the human and the LLM rankings' agreement with its bootstrap interval.
create table if not exists trust_agreement (
    study_id        varchar not null,          -- the study (trust_studies)
    statistic       varchar not null,          -- 'kendall_tau', 'spearman_rho' or 'tau_ap' (human ranking as the reference)
    estimate        double,                    -- on all topics once; null when a ranking is constant
    lower           double,                    -- the interval's lower end (percentile bootstrap over topics)
    upper           double,                    -- the interval's upper end
    n_defined       integer not null,          -- replicates where the statistic is defined
    primary key (study_id, statistic)
);

-- One row per study x pair of systems the two qrels order oppositely: which conclusions change.
create table if not exists trust_flips (
    study_id        varchar not null,          -- the study (trust_studies)
    system_a        varchar not null,          -- the system the human qrels rank higher
    system_b        varchar not null,          -- the system the LLM qrels rank higher
    human_a         double not null,           -- system_a's mean under the human qrels
    human_b         double not null,           -- system_b's mean under the human qrels
    human_gap       double not null,           -- human_a - human_b (> 0)
    llm_a           double not null,           -- system_a's mean under the LLM qrels
    llm_b           double not null,           -- system_b's mean under the LLM qrels
    llm_gap         double not null,           -- llm_a - llm_b (< 0)
    primary key (study_id, system_a, system_b)
);

-- One row per study x system x method: an interval for the system's score under the full human qrels.
create table if not exists trust_intervals (
    study_id        varchar not null,          -- the study (trust_studies)
    system          varchar not null,          -- the system
    method          varchar not null,          -- 'ppi', 'human_only' or 'calibrated_ppi' (tasks/evaluate/intervals.py)
    estimate        double not null,           -- the point estimate of the human score
    lower           double not null,           -- the interval's lower end
    upper           double not null,           -- the interval's upper end
    n_sample        integer not null,          -- human-labelled pairs it used
    primary key (study_id, system, method)
);
