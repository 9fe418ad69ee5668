-- Merge staged outcomes (requests are merged first), each as outcome_action says (sql/engine/views): dropped if it
-- contradicts its stored request, kept if stored, replaced if a stored failure was asked again (the old one kept in
-- the history table), else new. Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    outcome_action(
        s.request_parse_status, s.status, s.judged_at, a.{{ run_id|ident }} is not null, a.status,
        a.{{ time_column|ident }}
    ) as action
from staged_checked as s
left join {{ answers_table|ident }} as a
    on a.{{ run_id|ident }} = s.run_id{% for k in key_names %} and a.{{ k|ident }} = s.{{ k|ident }}{% endfor %};

{% if history_table %}
insert into {{ history_table|ident }} (
    {{ run_id|ident }}, {{ key_names|idents }}, {{ value_names|idents }}, status, reason, request_id,
    {{ time_column|ident }}, replaced_at, why
)
select a.{{ run_id|ident }}, {{ key_names|idents(prefix="a.") }}, {{ value_names|idents(prefix="a.") }}, a.status,
       a.reason, a.request_id, a.{{ time_column|ident }}, $replaced_at, m.action
from {{ answers_table|ident }} as a
inner join outcome_merge as m
    on m.run_id = a.{{ run_id|ident }}{% for k in key_names %} and m.{{ k|ident }} = a.{{ k|ident }}{% endfor %}
where m.action = 'failure asked again';
{% endif %}

delete from {{ answers_table|ident }} as a
using outcome_merge as m
where m.action = 'failure asked again'
  and m.run_id = a.{{ run_id|ident }}{% for k in key_names %} and m.{{ k|ident }} = a.{{ k|ident }}{% endfor %};

insert into {{ answers_table|ident }} (
    {{ run_id|ident }}, {{ key_names|idents }}, {{ value_names|idents }}, status, reason, request_id,
    {{ time_column|ident }}
)
select run_id, {{ key_names|idents }}, {{ value_names|idents }}, status, reason, request_id, judged_at
from outcome_merge
where action in ('new', 'failure asked again');

select count(*) from outcome_merge where action = 'drop'
