-- A published judge run by name: its id and collection (LLM qrels are made from published runs only).
select run_id, collection_id, status from judge_runs where run_name = $run_name
