-- How many request ids the last dedupe (engine/dedupe_requests) brought back to one: none, most of the time.
select count(*) from deduped_request_ids
