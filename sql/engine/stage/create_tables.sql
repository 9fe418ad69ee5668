-- A declared stage's tables (tasks/engine/stage.py), created when a run of it is first claimed: its runs, one row per
-- answered item, and the failures a retry replaced. No keys: uniqueness is kept by the merge and checked by the gate
-- (assert_no_copies), as on a DuckLake warehouse. Stages that predate declarations have these tables from their
-- migrations (sql/migrations/), with the same columns.
create table if not exists {{ runs_table|ident }} (
    {{ run_id|ident }} varchar not null,
    run_name varchar not null,
{%- for c in run_table_columns %}
    {{ c.name|ident }} {{ c.type }},
{%- endfor %}
    params json not null,
    status varchar not null,
    status_reason varchar,
    created_at timestamp not null,
    finished_at timestamp
);

{%- macro answer_columns() %}
    {{ run_id|ident }} varchar not null,
{%- for c in keys %}
    {{ c.name|ident }} {{ c.type }} not null,
{%- endfor %}
{%- for c in values %}
    {{ c.name|ident }} {{ c.type }},
{%- endfor %}
    status varchar not null,
    reason varchar,
    request_id varchar,
    {{ time_column|ident }} timestamp not null
{%- endmacro %}

create table if not exists {{ answers_table|ident }} ({{ answer_columns() }}
){% if history_table %};

create table if not exists {{ history_table|ident }} ({{ answer_columns() }},
    replaced_at timestamp not null,
    why varchar not null
){% endif %}
