-- A declared stage's run by name: its id, what fixes it (the declaration's `fixed`, in order), its request parameters.
select {{ run_id|ident }}, {{ fixed_names|idents }}, params
from {{ runs_table|ident }}
where run_name = $run_name
