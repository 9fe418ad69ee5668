-- Systems ranked by qrels (issue 21): `peras evaluate` scores TREC runs with ir_measures under the human qrels and
-- under qrels made of LLM labels, and says how alike the two rank the systems; `peras holes` hides a growing share
-- of the human labels, fills the holes with LLM labels and asks the same question at every share.

create table if not exists evaluations (
    evaluation_id   varchar primary key,       -- one `peras evaluate` call or one share of a holes experiment
    collection_id   varchar not null,
    qrels_source    varchar not null,          -- 'human', 'llm' (LLM labels alone) or 'filled' (human, holes by LLM)
    judge_run_id    varchar,                   -- the judge run whose labels made the LLM qrels (judge_runs); null for human
    holes_id        varchar,                   -- the holes experiment this evaluation is one share of (holes_experiments)
    measures        json not null,             -- the ir_measures names scored, e.g. ["nDCG@10"]
    systems         json not null,             -- {system: run file path or 'built'}
    created_at      timestamp not null
);

-- One row per evaluation x qrels x system x measure x topic: what ir_measures computed.
create table if not exists system_scores (
    evaluation_id   varchar not null,          -- the evaluation (evaluations)
    qrels_name      varchar not null,          -- 'human', or whose labels: a personality code, 'majority', or 'filled@0.30'
    system          varchar not null,          -- the run's tag (6th column of the run file)
    measure         varchar not null,          -- ir_measures name, e.g. 'nDCG@10'
    query_id        varchar not null,          -- a topic, or 'all' for the mean over topics (ir_measures' aggregate)
    value           double,                    -- the measure's value
    primary key (evaluation_id, qrels_name, system, measure, query_id)
);

-- One row per evaluation x qrels x measure (x topic): how alike a qrels set ranks the systems to the human qrels.
create table if not exists rank_agreement (
    evaluation_id   varchar not null,          -- the evaluation (evaluations)
    qrels_name      varchar not null,          -- the qrels compared with the human ones
    measure         varchar not null,          -- ir_measures name the systems are ranked by
    query_id        varchar not null,          -- 'all': systems ranked by their mean; else ranked on this topic alone
    n_systems       integer not null,          -- systems ranked
    kendall_tau     double,                    -- Kendall's tau-b (scipy.stats.kendalltau); null when a ranking is constant
    spearman_rho    double,                    -- Spearman's rho (scipy.stats.spearmanr)
    tau_ap          double,                    -- tau-AP (Yilmaz, Aslam, Robertson 2008), human ranking as the reference
    primary key (evaluation_id, qrels_name, measure, query_id)
);

-- One row per `peras holes` call: which labels were hidden and what filled them.
create table if not exists holes_experiments (
    holes_id        varchar primary key,       -- a holes experiment
    collection_id   varchar not null,
    judge_run_id    varchar not null,          -- the judge run whose labels fill the holes (judge_runs)
    personality     varchar not null,          -- whose labels fill them: a personality code or 'majority'
    seed            bigint not null,           -- the hiding draws depend on this and the qrels alone
    n_pairs         integer not null,          -- human-labelled pairs the experiment hides from (those the run labels)
    n_pairs_unlabelled integer not null,       -- human-labelled pairs left out because the run has no label for them
    created_at      timestamp not null
);

-- One row per holes experiment x share x measure: the filled qrels' ranking of the systems against the full human one.
create table if not exists holes_results (
    holes_id        varchar not null,          -- the experiment (holes_experiments)
    share           double not null,           -- share of the human labels hidden (stratified by grade)
    measure         varchar not null,          -- ir_measures name the systems are ranked by
    evaluation_id   varchar not null,          -- the evaluation holding its scores (evaluations)
    n_hidden        integer not null,          -- human labels hidden and replaced by the LLM's
    hidden_accuracy double not null,           -- share of the hidden pairs where the LLM label equals the human one
    n_systems       integer not null,          -- systems ranked
    kendall_tau     double,                    -- Kendall's tau-b, filled vs full human qrels
    spearman_rho    double,                    -- Spearman's rho
    tau_ap          double,                    -- tau-AP, the full human ranking as the reference
    mean_topic_tau  double,                    -- Kendall's tau per topic, averaged over topics where it is defined
    primary key (holes_id, share, measure)
);
