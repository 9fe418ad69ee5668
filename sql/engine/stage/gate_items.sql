-- Everything a run holds for its gate (tasks/engine/runs.py): the items this call planned (planned_items) and every
-- answer the run has stored, planned now or by an earlier call. A planned item without an answer is missing; the
-- failure shares are over the whole run, so a narrower call cannot publish a run whose other items failed.
-- planned_<column>: what this call's plan fixes beside the keys (a stored answer that differs was drawn otherwise).
create or replace temp table gate_items as
with stored as (
    select * from {{ answers_table|ident }} where {{ run_id|ident }} = $run_id
),

joined as (
    select
{%- for k in key_names %}
        coalesce(p.{{ k|ident }}, s.{{ k|ident }}) as {{ k|ident }},
{%- endfor %}
{%- for c in planned %}
        p.{{ c.name|ident }} as planned_{{ c.name|ident }},
{%- endfor %}
{%- for c in values %}
        s.{{ c.name|ident }},
{%- endfor %}
        s.status,
        p.{{ key_names[0]|ident }} is not null as is_planned
    from planned_items as p
    full outer join stored as s
        on {% for k in key_names %}{% if not loop.first %} and {% endif %}p.{{ k|ident }} = s.{{ k|ident }}{% endfor %}
)

select
    *,
{%- if failure_group %}
    concat_ws(' ', {{ failure_group|idents }}) as failure_group,
{%- else %}
    '{{ failure_label|ident }}' as failure_group,
{%- endif %}
    printf('{{ item_format }}'{% for c in item_columns %}, {{ c|ident }}{% endfor %}) as item_name
from joined
