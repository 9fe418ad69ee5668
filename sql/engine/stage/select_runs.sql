-- Every run of every declared stage (tasks/engine/stage.py), with its kind, status and how many items it holds.
with all_runs as (
{%- if not stages %}
    select
        null::varchar as kind, null::varchar as run_id, null::varchar as run_name, null::varchar as model,
        null::varchar as backend, null::varchar as status, null::varchar as status_reason,
        null::timestamp as created_at, null::timestamp as finished_at, 0 as n_items, 0 as n_failures
    where false
{%- endif %}
{%- for stage in stages %}
    select
        '{{ stage.kind|ident }}' as kind, r.{{ stage.run_id|ident }} as run_id, r.run_name, r.model, r.backend,
        r.status, r.status_reason, r.created_at, r.finished_at,
        coalesce(a.n_items, 0) as n_items, coalesce(a.n_failures, 0) as n_failures
    from {{ stage.runs_table|ident }} as r
    left join (
        select {{ stage.run_id|ident }} as run_id, count(*) as n_items,
            count(*) filter (where status <> 'ok') as n_failures
        from {{ stage.answers_table|ident }}
        group by all
    ) as a on a.run_id = r.{{ stage.run_id|ident }}
{%- if not loop.last %}
    union all
{%- endif %}
{%- endfor %}
)

select * from all_runs
where $kind is null or kind = $kind
order by created_at, kind, run_name
