-- Issue 22: a judge run fanned out over hosts (flows/judge.py, judge with parts). Each part's child flow run writes a
-- beat every few seconds while it works; the parent takes a part whose beats stopped as lost (its host died) and
-- runs it again elsewhere. Append-only, so that children on many hosts never conflict.
create table if not exists judge_part_beats (
    run_id varchar not null,       -- the judge run (judge_runs.run_id)
    part varchar not null,         -- the part's name, e.g. p1-of-4
    flow_run_id varchar not null,  -- the Prefect flow run doing the part
    host varchar not null,         -- the machine it runs on
    beat_at timestamp not null     -- when it last said it was alive (UTC)
);
