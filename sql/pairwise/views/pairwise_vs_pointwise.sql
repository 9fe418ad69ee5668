-- The preference implied by pointwise labels beside the direct pairwise answer, on the same pairs: for each read
-- pairwise answer and each published judge run of the same collection, model and personality that labelled both
-- passages (per CoT setting and confidence method), the pointwise preference is the passage with the higher label
-- ('tie' when equal) and the pairwise one the passage chosen ('tie' for [[C]]). better_doc_id: the passage graded
-- higher in the qrels ('tie' when equal). Pairs no such judge run labelled are not here.
--   judge_run_id  the pointwise judge run (judge_runs.run_id) whose labels are compared
--   judge_run_name  its name
--   label_1  the judge run's label of doc_1
--   label_2  the judge run's label of doc_2
--   pointwise_doc_id  the passage the labels prefer, or 'tie'
--   pairwise_doc_id  the passage the pairwise answer chose, or 'tie'
--   better_doc_id  the passage graded higher in the qrels, or 'tie'
--   shown_order  'AB': doc_1 shown as passage A; 'BA': doc_2 shown as A
with facts as (
    select * from pairwise_facts where status = 'ok'
),

labels as (
    select run_id, run_name, collection_id, model, personality, cot, confidence_method, query_id, doc_id, label
    from stg_judgment_facts
    where label is not null
),

final as (
    select
        f.pairwise_run_id,
        f.run_name,
        f.collection_id,
        f.personality,
        f.prompt,
        f.query_id,
        f.doc_1,
        f.doc_2,
        f.shown_order,
        l1.run_id as judge_run_id,
        l1.run_name as judge_run_name,
        l1.cot,
        l1.confidence_method,
        l1.label as label_1,
        l2.label as label_2,
        case when l1.label > l2.label then f.doc_1 when l1.label < l2.label then f.doc_2 else 'tie' end
            as pointwise_doc_id,
        coalesce(f.chosen_doc_id, 'tie') as pairwise_doc_id,
        case
            when f.relevance_a = f.relevance_b then 'tie'
            when (f.relevance_a > f.relevance_b) = (f.shown_order = 'AB') then f.doc_1
            else f.doc_2
        end as better_doc_id
    from facts as f
    inner join labels as l1
        on l1.collection_id = f.collection_id and l1.model = f.model and l1.personality = f.personality
       and l1.query_id = f.query_id and l1.doc_id = f.doc_1
    inner join labels as l2
        on l2.run_id = l1.run_id and l2.cot = l1.cot and l2.confidence_method = l1.confidence_method
       and l2.personality = l1.personality and l2.query_id = f.query_id and l2.doc_id = f.doc_2
)

select * from final
