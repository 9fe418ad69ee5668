-- One row per answer of a published pairwise run, with the truth from the grades it was drawn with: the input of
-- every pairwise measure. truth is a position: 'A' when the passage shown first is graded higher, 'B' when the
-- second is, 'C' when both are graded the same (a tie). is_correct: choice = truth (null for a failure);
-- chosen_doc_id: the passage the answer preferred (null for a tie or a failure).
--   grade_difference  |relevance_1 - relevance_2|: the pair's stratum (0 = a tie)
--   relevance_a  qrels grade of the passage shown as A
--   relevance_b  qrels grade of the passage shown as B
--   truth  the right position: 'A', 'B', or 'C' when the grades are equal
--   is_correct  choice = truth; null for a failure
--   chosen_doc_id  the passage the answer preferred; null for a tie or a failure
--   shown_order  'AB': doc_1 shown as passage A; 'BA': doc_2 shown as A
with runs as (
    select * from pairwise_runs where status = 'published'
),

answers as (
    select
        a.*,
        case when a.position = 'AB' then a.relevance_1 else a.relevance_2 end as relevance_a,
        case when a.position = 'AB' then a.relevance_2 else a.relevance_1 end as relevance_b
    from pairwise_answers as a
),

final as (
    select
        a.pairwise_run_id,
        r.run_name,
        r.collection_id,
        coalesce(r.subset_name, 'all') as subset_name,
        r.model,
        a.personality,
        a.prompt,
        a.query_id,
        a.doc_1,
        a.doc_2,
        a.position as shown_order,
        abs(a.relevance_1 - a.relevance_2) as grade_difference,
        a.relevance_a,
        a.relevance_b,
        case when a.relevance_a > a.relevance_b then 'A' when a.relevance_a < a.relevance_b then 'B' else 'C' end
            as truth,
        a.choice,
        a.confidence,
        a.status,
        a.choice = (
            case when a.relevance_a > a.relevance_b then 'A' when a.relevance_a < a.relevance_b then 'B' else 'C' end
        ) as is_correct,
        case
            when a.choice = 'A' then (case when a.position = 'AB' then a.doc_1 else a.doc_2 end)
            when a.choice = 'B' then (case when a.position = 'AB' then a.doc_2 else a.doc_1 end)
        end as chosen_doc_id
    from answers as a
    inner join runs as r on r.pairwise_run_id = a.pairwise_run_id
)

select * from final
