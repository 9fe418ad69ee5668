-- needs: recognize_runs, recognize_states
-- Per published recognize run x personality x dimension: how the recognizer read the persona's sampled CoT answers
-- (EPR-S; the check set's readings are left out). A run that failed its gate (or is still running) is counted
-- nowhere: every view over recognize_shares (shift, accuracy, BFI-2 agreement) reads published runs only.
--   n_answers   answers asked;  n_read  answers whose reading read (status 'ok');  n_failures  the others
--   n_high, n_low, n_uncertain   read answers at each level
--   share_high, share_low, share_uncertain   each over n_read (null when nothing read)
--   lean        (n_high - n_low) / n_read: +1 every answer reads high, -1 every answer reads low
--   verdict     'high' when more answers read high than low, 'low' when more read low, else 'uncertain'
with runs as (
    select recognize_run_id, run_name, judge_run, model as recognizer_model from recognize_runs
    where status = 'published'
),

counted as (
    select
        r.run_name, r.judge_run, r.recognizer_model, s.personality, s.dimension,
        count(*) as n_answers,
        count(*) filter (where s.status = 'ok') as n_read,
        count(*) filter (where s.status != 'ok') as n_failures,
        count(*) filter (where s.status = 'ok' and s.level = 'high') as n_high,
        count(*) filter (where s.status = 'ok' and s.level = 'low') as n_low,
        count(*) filter (where s.status = 'ok' and s.level = 'uncertain') as n_uncertain
    from recognize_states as s
    inner join runs as r using (recognize_run_id)
    where s.personality != 'check-set'  -- the check set's readings are scored by select_check_scores
    group by all
),

final as (
    select
        *,
        n_high / nullif(n_read, 0) as share_high,
        n_low / nullif(n_read, 0) as share_low,
        n_uncertain / nullif(n_read, 0) as share_uncertain,
        (n_high - n_low) / nullif(n_read, 0) as lean,
        case when n_high > n_low then 'high' when n_low > n_high then 'low' else 'uncertain' end as verdict
    from counted
)

select * from final
