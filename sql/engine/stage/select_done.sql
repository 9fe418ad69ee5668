-- Items of a run that already have a stored outcome (an answer or a recorded failure), keys then status (a run
-- resumed with retry_failed plans its failures again).
select {{ key_names|idents }}, status
from {{ answers_table|ident }}
where {{ run_id|ident }} = $run_id
