-- Priming's own gate checks, over gate_items (the engine checks completeness and failure shares): every stored
-- batch as it was drawn, the scores of parsed batches well-formed. One row per problem.
select 'redrawn' as problem,
    printf('%d stored batches differ from their draw (was the collection re-ingested?), e.g. %s', count(*),
           min(item_name)) as detail
from gate_items
where status is not null and doc_ids != planned_doc_ids
having count(*) > 0

union all

select 'malformed' as problem,
    printf('%d parsed batches lack a 0-3 score per passage, e.g. %s', count(*), min(item_name)) as detail
from gate_items
where status = 'ok'
  and (scores is null or len(scores) != len(doc_ids) or list_min(scores) < 0 or list_max(scores) > 3)
having count(*) > 0
