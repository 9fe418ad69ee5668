-- oracle_of(metrics): the "Oracle" - for each run, CoT setting, confidence method and metric, the personality
-- (default included) with the best value, and its distance from `default` (delta_vs_default, null when the
-- run/setting has no default). metrics names a relation shaped like metrics_long (default: that view).
-- Ties are all listed in tied_personalities; best_personality is the first of them in alphabetical order.
-- Metrics without a direction (coverage) and null values take no part.
create or replace macro oracle_of(metrics := 'metrics_long') as table
with oracle_input as (
    select * from query_table(metrics)
    where is_higher_better is not null and value is not null
),

ranked as (
    select
        *,
        rank() over (
            partition by run_id, cot, confidence_method, metric
            order by case when is_higher_better then -value else value end
        ) as value_rank
    from oracle_input
),

best as (
    select
        run_id,
        cot,
        confidence_method,
        metric,
        any_value(run_name) as run_name,
        any_value(source) as source,
        any_value(collection_id) as collection_id,
        any_value(subset_name) as subset_name,
        any_value(model) as model,
        any_value(is_higher_better) as is_higher_better,
        min(personality) filter (where value_rank = 1) as best_personality,
        min(value) filter (where value_rank = 1) as best_value,
        count(*) filter (where value_rank = 1) as n_tied,
        string_agg(personality, ',' order by personality) filter (where value_rank = 1) as tied_personalities,
        any_value(value) filter (where personality = 'default') as default_value,
        count(*) as n_personalities
    from ranked
    group by run_id, cot, confidence_method, metric
),

final as (
    select
        run_id, run_name, source, collection_id, subset_name, model, cot, confidence_method,
        metric,
        is_higher_better,
        best_personality,
        best_value,
        n_tied,
        tied_personalities,
        default_value,
        best_value - default_value as delta_vs_default,
        n_personalities
    from best
)

select * from final
