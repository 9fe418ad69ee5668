-- Imports (issue 16): what an import did with integer labels outside the 0-3 scale (`--out-of-range`).
-- 'fail' (the default) stores such a pair as a label failure, never scored; 'clip' stores the nearest end of the
-- scale (5 -> 3, -1 -> 0), which is how the LLMJudge challenge scored its submissions. A clipped judgment has
-- status 'ok' and says in its reason what the file had. Labels that are not integers are failures either way.
-- Part of the import's fingerprint: the same file imported with the other policy replaces the run.
-- Imports made before this migration used 'fail'.

alter table import_reports add column if not exists out_of_range varchar default 'fail';  -- 'fail' or 'clip'
alter table import_reports add column if not exists n_clipped integer default 0;  -- labels clipped to 0 or 3
