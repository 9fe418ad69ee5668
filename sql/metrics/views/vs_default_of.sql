-- vs_default_of(metrics): each personality against the `default` (unprompted) condition of the same run, CoT
-- setting and confidence method: one row per group x metric with both values and delta = value - default_value.
-- metrics names a relation shaped like metrics_long (default: that view). is_better applies the metric's
-- direction (false on a tie; null when the metric has no direction or a value is null). Personalities whose
-- run/setting has no `default` group do not appear.
create or replace macro vs_default_of(metrics := 'metrics_long') as table
with comparison_input as materialized (
    select * from query_table(metrics)
),

defaults as (
    select run_id, cot, confidence_method, metric, value as default_value
    from comparison_input
    where personality = 'default'
),

final as (
    select
        comparison_input.run_id,
        comparison_input.run_name,
        comparison_input.source,
        comparison_input.collection_id,
        comparison_input.subset_name,
        comparison_input.model,
        comparison_input.personality,
        comparison_input.cot,
        comparison_input.confidence_method,
        comparison_input.metric,
        comparison_input.is_higher_better,
        comparison_input.value,
        defaults.default_value,
        comparison_input.value - defaults.default_value as delta,
        case
            when comparison_input.is_higher_better then comparison_input.value > defaults.default_value
            when not comparison_input.is_higher_better then comparison_input.value < defaults.default_value
        end as is_better
    from comparison_input
    inner join defaults using (run_id, cot, confidence_method, metric)
    where comparison_input.personality <> 'default'
)

select * from final
