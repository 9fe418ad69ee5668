-- The with-CoT answers of one judge run, one per personality x pair: the text of the label request of a with-CoT
-- judgment whose label read (its reasoning and its score). A pair judged under several confidence methods keeps the
-- answer with the longest text (each method asks with its own prompt; UMBRELA's asks for the score alone, the 'self'
-- and 'certainty' prompts for reasoning), ties by method name.
with runs as (
    select run_id from judge_runs where run_name = $judge_run
),

judged as (
    select j.personality, j.query_id, j.doc_id, j.confidence_method, j.label_request_id as request_id
    from judgments as j
    inner join runs using (run_id)
    where j.cot and j.label_request_id is not null
),

answered as (
    select j.personality, j.query_id, j.doc_id, j.confidence_method, r.raw_text as text
    from judged as j
    inner join llm_requests as r using (request_id)
    where r.parse_status = 'ok' and r.raw_text is not null
),

final as (
    select personality, query_id, doc_id, text
    from answered
    qualify row_number() over (partition by personality, query_id, doc_id order by length(text) desc, confidence_method) = 1
)

select * from final order by personality, query_id, doc_id
