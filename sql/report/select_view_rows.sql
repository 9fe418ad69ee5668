-- The first rows of one priming summary view (listed by select_priming_views), of one collection or all, in a
-- stable order. The view must have a collection_id column. Parameters: view_name, collection_id, max_rows.
select *
from query_table($view_name)
where $collection_id is null or collection_id = $collection_id
order by all
limit $max_rows
