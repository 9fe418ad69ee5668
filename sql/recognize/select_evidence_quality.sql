-- One recognize run's evidence scores (recognize_evidence_quality).
select evidence_run_name, judge_model, n_texts, n_scored, mean_score, sd_score, min_score, max_score
from recognize_evidence_quality
where run_name = $run_name
order by evidence_run_name
