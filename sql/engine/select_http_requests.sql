-- HTTP requests a run has cost so far, its resumes included: the run-wide --request-budget counts from here.
select coalesce(sum(http_requests), 0) from (
    select http_requests from llm_requests where run_id = $run_id
    union all
    select http_requests from llm_request_history where run_id = $run_id
)
