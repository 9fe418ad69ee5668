-- Every headline metric of every group as (group, metric, value, is_higher_better) (see long_from.sql).
select * from long_from()
