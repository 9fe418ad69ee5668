-- Per published pairwise run x personality x prompt, over the answers read (status 'ok'):
--   accuracy_no_ties  correct / answers on pairs graded apart (truth A or B); random baseline 0.5
--   accuracy_ties     correct / all answers, a tie right only as [[C]] (the 'tie' prompt); random baseline 1/3
--   share_a           answers choosing the passage shown first / answers (position bias: 0.5 without it)
--   consistency       pairs whose two orders both read and chose the same passage (or both a tie) / pairs whose
--                     two orders both read
--   n_high, accuracy_high, n_low, accuracy_low: answers on pairs graded apart with confidence >= 80 (the
--                     study's certainty threshold) and below it, and the accuracy of each (null when empty)
--   n_answers  answers stored (read or not)
--   n_failures  answers recorded as failures (unreadable after every regeneration, or refused)
--   n_read  answers read (status 'ok')
--   n_no_ties  answers read on pairs graded apart
--   baseline_no_ties  0.5: a random choice between A and B
--   baseline_ties  1/3: a random choice among A, B and C
--   n_pairs_both_read  pairs whose two orders were both read
--   n_high  answers on pairs graded apart with confidence >= 80
--   accuracy_high  correct / n_high (null when empty)
--   n_low  answers on pairs graded apart with confidence < 80
--   accuracy_low  correct / n_low (null when empty)
with facts as (
    select * from pairwise_facts
),

answers as (
    select
        pairwise_run_id, run_name, collection_id, subset_name, model, personality, prompt,
        count(*) as n_answers,
        count(*) filter (where status != 'ok') as n_failures,
        count(*) filter (where status = 'ok') as n_read,
        count(*) filter (where status = 'ok' and truth != 'C') as n_no_ties,
        count(*) filter (where status = 'ok' and truth != 'C' and is_correct) as n_correct_no_ties,
        count(*) filter (where status = 'ok' and is_correct) as n_correct_ties,
        count(*) filter (where choice = 'A') as n_choice_a,
        count(*) filter (where truth != 'C' and confidence >= 80) as n_high,
        count(*) filter (where truth != 'C' and confidence >= 80 and is_correct) as n_high_correct,
        count(*) filter (where truth != 'C' and confidence < 80) as n_low,
        count(*) filter (where truth != 'C' and confidence < 80 and is_correct) as n_low_correct
    from facts
    group by all
),

orders as (
    select
        pairwise_run_id, personality, prompt, query_id, doc_1, doc_2,
        count(*) filter (where status = 'ok') = 2 as both_read,
        count(distinct coalesce(chosen_doc_id, 'tie')) filter (where status = 'ok') = 1 as same_choice
    from facts
    group by all
),

consistency as (
    select
        pairwise_run_id, personality, prompt,
        count(*) filter (where both_read) as n_pairs_both_read,
        count(*) filter (where both_read and same_choice) as n_consistent
    from orders
    group by all
),

final as (
    select
        a.pairwise_run_id, a.run_name, a.collection_id, a.subset_name, a.model, a.personality, a.prompt,
        a.n_answers, a.n_failures, a.n_read,
        a.n_no_ties,
        case when a.n_no_ties > 0 then a.n_correct_no_ties / a.n_no_ties end as accuracy_no_ties,
        0.5::double as baseline_no_ties,
        case when a.n_read > 0 then a.n_correct_ties / a.n_read end as accuracy_ties,
        (1 / 3)::double as baseline_ties,
        case when a.n_read > 0 then a.n_choice_a / a.n_read end as share_a,
        c.n_pairs_both_read,
        case when c.n_pairs_both_read > 0 then c.n_consistent / c.n_pairs_both_read end as consistency,
        a.n_high,
        case when a.n_high > 0 then a.n_high_correct / a.n_high end as accuracy_high,
        a.n_low,
        case when a.n_low > 0 then a.n_low_correct / a.n_low end as accuracy_low
    from answers as a
    left join consistency as c using (pairwise_run_id, personality, prompt)
)

select * from final
