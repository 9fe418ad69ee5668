-- The condition x round builds a set already has, and their status (the engine's held plan skips them).
select condition, round, status from persona_set_builds where set_id = $run_id
