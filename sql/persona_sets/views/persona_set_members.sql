-- The personas of every built set: per set and condition, the latest round whose instruction was read (the
-- candidate kept: the one that passed, or the last tried), with the rounds the condition took and its fidelity.
--   rounds        rounds the condition was built in (1 when its first candidate passed)
--   chosen_round  the round of the kept candidate
with builds as (
    select * from persona_set_builds
),

kept as (
    select set_id, condition, max(round) filter (where status = 'ok') as chosen_round, max(round) as rounds
    from builds
    group by set_id, condition
),

final as (
    select
        s.set_id, s.set_name, s.version, s.status, s.model, k.condition, b.personality, k.rounds, k.chosen_round,
        b.keywords, b.instruction, b.check_run_name, b.is_faithful, b.effect_size, b.effect_ci_low
    from kept as k
    inner join persona_sets as s using (set_id)
    inner join builds as b on b.set_id = k.set_id and b.condition = k.condition and b.round = k.chosen_round
)

select * from final
