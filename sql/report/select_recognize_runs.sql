-- Per published recognize run: the check set's figures first (how far to trust the recognizer), then the pole
-- accuracy, the shifts and the default control (views recognize_check_scores, recognize_accuracy).
select
    r.run_name, r.judge_run, r.model, r.sample_size,
    c.n_texts, c.n_correct, c.accuracy as check_accuracy, c.id_f1,
    a.n_personas, a.n_recognised, a.accuracy, a.mean_shift, a.mean_off_target_shift, a.default_share_uncertain,
    a.is_default_mostly_uncertain
from recognize_runs as r
left join recognize_check_scores as c using (run_name)
left join recognize_accuracy as a using (run_name)
where r.status = 'published'
order by r.run_name
