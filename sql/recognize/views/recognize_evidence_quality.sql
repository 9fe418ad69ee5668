-- needs: recognize_runs, recognize_evidence_runs, recognize_evidence_scores
-- The evidence judge's 1-5 scores of a recognize run's check-set evidence (PersonalityEvd §4.1-4.2: semantic overlap
-- with the ground truth, scored by an LLM), per published recognize run and published evidence run.
--   evidence_run_name, judge_model   the evidence run and the model that scored
--   n_texts      check-set readings sent to the judge;  n_scored  those with a score (the rest failed to read)
--   mean_score, sd_score, min_score, max_score   over the scored ones (sd: sample SD, null for one score)
with runs as (
    select recognize_evidence_run_id, run_name as evidence_run_name, model as judge_model
    from recognize_evidence_runs
    where status = 'published'
),

scores as (
    select s.recognize_run_id, r.evidence_run_name, r.judge_model, s.score
    from recognize_evidence_scores as s
    inner join runs as r using (recognize_evidence_run_id)
),

final as (
    select
        r.run_name,
        s.evidence_run_name,
        s.judge_model,
        count(*) as n_texts,
        count(s.score) as n_scored,
        avg(s.score) as mean_score,
        stddev_samp(s.score) as sd_score,
        min(s.score) as min_score,
        max(s.score) as max_score
    from scores as s
    inner join recognize_runs as r using (recognize_run_id)
    where r.status = 'published'
    group by all
)

select * from final
