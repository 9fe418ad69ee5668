-- Give one run of a declared stage another name, in the caller's transaction (its id, shards and answers stay).
update {{ runs_table|ident }} set run_name = $new_name where {{ run_id|ident }} = $run_id
