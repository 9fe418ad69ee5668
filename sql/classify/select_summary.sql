-- The summary rows of one classify run. Parameters: classify_run_id.
select * from clf_summary
where classify_run_id = $classify_run_id
order by learner
