-- Delete one build of a personality set (a set version) and its condition x round builds, in the caller's
-- transaction. Its personas check runs (build-NAME-vV-roundR) are runs of their own; judge runs that used its
-- personalities keep their instruction texts (personalities).
delete from persona_set_builds where set_id = $run_id;

delete from persona_sets where set_id = $run_id
