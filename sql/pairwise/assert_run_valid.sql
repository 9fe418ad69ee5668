-- Pairwise's own gate checks, over gate_items (the engine checks completeness and failure shares): every stored
-- answer with the grades it was drawn with, every read verdict well-formed for its prompt (A or B, C only for
-- 'tie'; a confidence in range for 'certainty', 'self', 'logp' and 'mp'). One row per problem.
select 'redrawn' as problem,
    printf('%d stored answers have other grades than their draw (were the qrels re-ingested?), e.g. %s',
           count(*), min(item_name)) as detail
from gate_items
where status is not null
  and (relevance_1 != planned_relevance_1 or relevance_2 != planned_relevance_2)
having count(*) > 0

union all

select 'malformed' as problem,
    printf('%d read answers lack a verdict or confidence their prompt asks for, e.g. %s', count(*),
           min(item_name)) as detail
from gate_items
where status = 'ok'
  and (choice is null
       or (choice = 'C' and prompt != 'tie')
       or (prompt = 'certainty' and (confidence is null or confidence < 1 or confidence > 100))
       or (prompt in ('self', 'logp', 'mp') and (confidence is null or confidence < 0 or confidence > 100)))
having count(*) > 0
