-- A set version is named by its set and version (NAME@V), which judge runs and check runs refer to: it is not
-- renamed. Build a new set instead (`peras personas build NEW_NAME`). Selecting nothing, this changes nothing;
-- cli/commands/runs.py refuses the rename before it gets here.
select 1 where false
