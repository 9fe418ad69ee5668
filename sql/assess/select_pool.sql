-- A judge run's pool as a plan picks from it: every pair it labels, its majority label (most votes, ties to the
-- lower label), the mean confidence of its labels and the entropy (bits) of its labels across personalities.
with judged as (
    select query_id, doc_id, personality, label, confidence
    from judgments
    where run_id = $run_id and label is not null
),

votes as (
    select query_id, doc_id, label, count(*) as n_votes
    from judged
    group by all
),

pairs as (
    select query_id, doc_id, count(*) as n_labels, avg(confidence) as mean_confidence
    from judged
    group by all
),

spread as (
    select
        votes.query_id,
        votes.doc_id,
        arg_max(votes.label, votes.n_votes * 10 - votes.label) as llm_label,
        0.0 - sum(votes.n_votes / pairs.n_labels * log2(votes.n_votes / pairs.n_labels)) as label_entropy
    from votes
    inner join pairs using (query_id, doc_id)
    group by all
),

final as (
    select pairs.query_id, pairs.doc_id, spread.llm_label::bigint as llm_label, pairs.mean_confidence,
        spread.label_entropy + 0.0 as label_entropy
    from pairs
    inner join spread using (query_id, doc_id)
)

select * from final order by query_id, doc_id
