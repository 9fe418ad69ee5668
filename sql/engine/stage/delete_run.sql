-- Delete one run of a declared stage and everything it holds (its answers, their history, the stage's owned tables,
-- its lease and its fan-out attempts), in the caller's transaction. The LLM answers it asked for stay in llm_requests
-- (and llm_request_history): they are the request cache, and another run may share them.
{% if history_table %}
delete from {{ history_table|ident }} where {{ run_id|ident }} = $run_id;
{% endif %}{% for table in owned_tables %}
delete from {{ table|ident }} where {{ run_id|ident }} = $run_id;
{% endfor %}
delete from {{ answers_table|ident }} where {{ run_id|ident }} = $run_id;

delete from run_attempts where kind = '{{ kind|ident }}' and run_id = $run_id;

delete from run_leases where kind = '{{ kind|ident }}' and run_id = $run_id;

delete from {{ runs_table|ident }} where {{ run_id|ident }} = $run_id
