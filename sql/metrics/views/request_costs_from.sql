-- request_costs_from(facts): what each group's judgments cost in LLM requests and tokens, over the judgments of
-- facts (a relation shaped like stg_judgment_facts: the group columns, query_id and doc_id; default every scored
-- judgment of a published run, label failures included, since they cost requests too). A judgment's requests are
-- the distinct non-null ids among its label_request_id, confidence_request_id and sample_request_ids (judgments):
-- its label request, its confidence request and every sampling vote, each once (a sampling judgment's label request
-- is its first vote; a method that reads label and confidence from one answer references that answer once). A
-- request two judgments share (the answer cache: both CoT settings, or two runs, asking the same thing) counts for
-- each, so a method's cost does not depend on what else was judged.
--   n_requests                      sum over the group's judgments of their request counts
--   n_requests_without_tokens       of those, requests whose server reported no token counts (an error): they add
--                                   nothing to the token sums
--   prompt_tokens                   llm_requests.prompt_tokens summed over the same requests
--   completion_tokens               llm_requests.completion_tokens summed over the same requests
--   requests_per_judgment           n_requests / n_judgments
--   prompt_tokens_per_judgment      prompt_tokens / n_judgments
--   completion_tokens_per_judgment  completion_tokens / n_judgments
-- An imported run references no requests: 0 requests and 0 tokens per judgment.
create or replace macro request_costs_from(facts := 'stg_judgment_facts') as table
with cost_input as materialized (
    select * from query_table(facts)
),

groups as (
    select
        run_id, run_name, source, collection_id, subset_name, model, personality, cot, confidence_method,
        count(*) as n_judgments
    from cost_input
    group by all
),

judged as (
    select
        cost_input.run_id,
        cost_input.personality,
        cost_input.cot,
        cost_input.confidence_method,
        list_distinct(list_filter(
            [j.label_request_id, j.confidence_request_id] || coalesce(j.sample_request_ids, []::varchar[]),
            lambda request_id: request_id is not null
        )) as request_ids
    from cost_input
    inner join judgments as j using (run_id, query_id, doc_id, personality, cot, confidence_method)
),

referenced as (
    select run_id, personality, cot, confidence_method, unnest(request_ids) as request_id
    from judged
),

sums as (
    select
        referenced.run_id,
        referenced.personality,
        referenced.cot,
        referenced.confidence_method,
        count(*) as n_requests,
        count(*) filter (where r.prompt_tokens is null or r.completion_tokens is null) as n_requests_without_tokens,
        coalesce(sum(r.prompt_tokens), 0) as prompt_tokens,
        coalesce(sum(r.completion_tokens), 0) as completion_tokens
    from referenced
    left join llm_requests as r using (request_id)
    group by all
),

final as (
    select
        groups.*,
        coalesce(sums.n_requests, 0)::bigint as n_requests,
        coalesce(sums.n_requests_without_tokens, 0)::bigint as n_requests_without_tokens,
        coalesce(sums.prompt_tokens, 0)::bigint as prompt_tokens,
        coalesce(sums.completion_tokens, 0)::bigint as completion_tokens,
        (coalesce(sums.n_requests, 0) / groups.n_judgments)::double as requests_per_judgment,
        (coalesce(sums.prompt_tokens, 0) / groups.n_judgments)::double as prompt_tokens_per_judgment,
        (coalesce(sums.completion_tokens, 0) / groups.n_judgments)::double as completion_tokens_per_judgment
    from groups
    left join sums using (run_id, personality, cot, confidence_method)
)

select * from final
