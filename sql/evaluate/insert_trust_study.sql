-- Publish one trust study: its row and its parts (trust_new_scores, trust_new_agreement, trust_new_flips and
-- trust_new_intervals registered).
insert into trust_studies (
    study_id, collection_id, judge_run_id, labels, cot, confidence_method, measure, human_sample, n_sample, n_pool,
    replicates, level, seed, dedupe, duplicates, systems, n_topics, created_at
)
values (
    $study_id, $collection_id, $judge_run_id, $labels, $cot, $confidence_method, $measure, $human_sample, $n_sample,
    $n_pool, $replicates, $level, $seed, $dedupe, $duplicates, $systems, $n_topics, $created_at
);

insert into trust_scores (study_id, qrels_name, system, query_id, value)
select $study_id, qrels_name, system, query_id, value from trust_new_scores;

insert into trust_agreement (study_id, statistic, estimate, lower, upper, n_defined)
select $study_id, statistic, estimate, lower, upper, n_defined from trust_new_agreement;

insert into trust_flips (study_id, system_a, system_b, human_a, human_b, human_gap, llm_a, llm_b, llm_gap)
select $study_id, system_a, system_b, human_a, human_b, human_gap, llm_a, llm_b, llm_gap from trust_new_flips;

insert into trust_intervals (study_id, system, method, estimate, lower, upper, n_sample)
select $study_id, system, method, estimate, lower, upper, n_sample from trust_new_intervals
