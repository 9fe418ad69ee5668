-- The conditions still to build: those whose latest readable candidate did not pass its check, or that have none.
-- Why: a round only rebuilds what failed; a passing candidate is kept.
with wanted as (
    select unnest($conditions::varchar[]) as condition
),

latest as (
    select condition, arg_max(is_faithful, round) as is_faithful
    from persona_set_builds
    where set_id = $set_id and status = 'ok'
    group by condition
)

select w.condition
from wanted as w
left join latest as l using (condition)
where l.is_faithful is distinct from true
