-- Register a run of a declared stage; its results are published once its gate passes.
insert into {{ runs_table|ident }} ({{ run_id|ident }}, run_name, {{ insert_names|idents }}, params, status, created_at)
values ($run_id, $run_name, {{ insert_names|idents(prefix="$") }}, $params, 'running', $created_at)
