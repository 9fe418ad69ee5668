-- Work items of a run that already have a stored judgment (result or recorded failure).
select query_id, doc_id, personality, cot, confidence_method from judgments where run_id = $run_id
