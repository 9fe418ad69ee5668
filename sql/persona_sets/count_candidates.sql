-- Conditions of a build with a readable instruction so far (persona_set_members): none, and there is no set to check.
select count(*) from persona_set_members where set_id = $set_id
