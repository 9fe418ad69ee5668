-- The next pair, in pick order, this assessor was never given and fewer than $overlap assessors hold (a pair held:
-- given and not skipped, or labelled).
with holders as (
    select plan_id, query_id, doc_id, assessor from assess_claims where plan_id = $plan_id and not is_skipped
    union
    select plan_id, query_id, doc_id, assessor from assess_labels where plan_id = $plan_id
),

held as (
    select query_id, doc_id, count(*) as n_holders from holders group by all
),

final as (
    select pairs.query_id, pairs.doc_id
    from assess_pairs as pairs
    left join held using (query_id, doc_id)
    where pairs.plan_id = $plan_id and coalesce(held.n_holders, 0) < $overlap
        and not exists (
            select 1 from assess_claims as mine
            where mine.plan_id = pairs.plan_id and mine.query_id = pairs.query_id and mine.doc_id = pairs.doc_id
                and mine.assessor = $assessor
        )
        and not exists (
            select 1 from assess_labels as done
            where done.plan_id = pairs.plan_id and done.query_id = pairs.query_id and done.doc_id = pairs.doc_id
                and done.assessor = $assessor
        )
    order by pairs.pick_order
    limit 1
)

select * from final
