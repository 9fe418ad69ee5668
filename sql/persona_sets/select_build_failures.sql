-- Why each condition a build could not finish failed, in its last round: what `peras personas build` reports.
select condition, round, status, reason
from persona_set_builds
where set_id = $set_id and list_contains($conditions, condition)
qualify row_number() over (partition by condition order by round desc) = 1
order by condition
