-- The condition x round builds a set already has (the engine's plan skips them).
select condition, round from persona_set_builds where set_id = $set_id
