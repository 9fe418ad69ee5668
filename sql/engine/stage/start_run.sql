-- An existing run called again (resumed or extended): the scope of this call and the backend asking now, running
-- again, with no reason left from an earlier failure.
update {{ runs_table|ident }}
set {% for c in run_columns %}{{ c.name|ident }} = ${{ c.name|ident }}, {% endfor %}backend = $backend, status = 'running',
    status_reason = null, finished_at = null
where {{ run_id|ident }} = $run_id
