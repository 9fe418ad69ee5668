-- needs: assess_plans, assess_pairs, assess_labels
-- Per plan, assessor and reference: how often the assessor's labels equal the reference's and Cohen's kappa (four
-- grades). References: 'qrels' (the collection's human qrels, where they judge the pair), 'llm' (the judge run's
-- majority label the plan stored) and 'assessor <name>' (another assessor of the same pairs, with --overlap).
--   plan_name  the assessment plan (assess_plans.plan_name)
--   assessor  who labelled (assess_labels.assessor)
--   reference  'qrels', 'llm' or 'assessor <name>': what the assessor's labels are compared with
--   n_pairs  pairs both the assessor and the reference labelled
--   accuracy  share of those pairs where the assessor's label equals the reference's
--   cohen_kappa  Cohen's kappa of the assessor's labels against the reference's; null when chance agreement is 1
with labels as (
    select plan_id, query_id, doc_id, assessor, relevance from assess_labels
),

compared as (
    select labels.plan_id, labels.assessor, 'qrels' as reference, labels.relevance as label, qrels.relevance as other
    from labels
    inner join assess_plans as plans using (plan_id)
    inner join qrels
        on qrels.collection_id = plans.collection_id and qrels.query_id = labels.query_id
        and qrels.doc_id = labels.doc_id
    union all
    select labels.plan_id, labels.assessor, 'llm' as reference, labels.relevance as label, pairs.llm_label as other
    from labels
    inner join assess_pairs as pairs using (plan_id, query_id, doc_id)
    union all
    select a.plan_id, a.assessor, 'assessor ' || b.assessor as reference, a.relevance as label, b.relevance as other
    from labels as a
    inner join labels as b
        on a.plan_id = b.plan_id and a.query_id = b.query_id and a.doc_id = b.doc_id and a.assessor < b.assessor
),

observed as (
    select
        plan_id, assessor, reference, count(*) as n_pairs, count(*) filter (where label = other) as n_agree,
        avg((label = other)::double) as accuracy
    from compared
    group by all
),

margins as (
    select plan_id, assessor, reference, count(*) filter (where label = grade) * count(*) filter (where other = grade)
        as chance
    from compared
    cross join (select unnest([0, 1, 2, 3]) as grade) as grades
    group by plan_id, assessor, reference, grade
),

expected as (
    select plan_id, assessor, reference, sum(chance) as chance_agree from margins group by all
),

final as (
    select
        plans.plan_name, observed.assessor, observed.reference, observed.n_pairs, observed.accuracy,
        cohen_kappa(observed.n_pairs, observed.n_agree, expected.chance_agree) as cohen_kappa
    from observed
    inner join expected using (plan_id, assessor, reference)
    inner join assess_plans as plans using (plan_id)
)

select * from final
