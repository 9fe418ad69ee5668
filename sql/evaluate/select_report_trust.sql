-- The report's 'Rankings you can trust' tables: every trust study's summary (collection filter), oldest first.
select *
from trust_summary
where $collection_id is null or collection_id = $collection_id
order by created_at, study_id
