-- A judge run publishes only when its quality gate passes: metric views read published runs only.
alter table judge_runs add column if not exists status varchar default 'published';
alter table judge_runs add column if not exists finished_at timestamp;

-- The personality conditions judges were run under, with their exact instruction text.
create table if not exists personalities (
    personality     varchar primary key,
    name            varchar not null,
    trait           varchar,
    pole            varchar,
    instruction     varchar not null,
    source          varchar not null          -- 'builtin' or the user file it came from
);
