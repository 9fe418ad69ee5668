-- sample_score_stats(scores): per group of a persona check's scores, the greedy answers' score (sample_index 0)
-- and the mean, standard deviation and number of the k sampled answers' scores (sample_index > 0). scores names a
-- relation with the columns sample_index and score; every other column names the group (a run x personality x
-- domain, or x facet). What persona_domain_scores and persona_facet_scores report.
create or replace macro sample_score_stats(scores) as table
with stats_input as (
    select * from query_table(scores)
),

final as (
    select
        * exclude (sample_index, score),
        any_value(score) filter (where sample_index = 0) as greedy_score,
        avg(score) filter (where sample_index > 0) as mean_score,
        stddev_samp(score) filter (where sample_index > 0) as sd_score,
        count(*) filter (where sample_index > 0) as n_samples
    from stats_input
    group by all
)

select * from final
