-- pair_texts_in(collection, subset): the pairs of pair_texts (the qrels pairs with their texts and text_sha) of one
-- collection, or of one of its topic subsets (subset null: all its topics). What the judge asks
-- (sql/judge/select_pairs.sql) and what pairwise draws from (sql/pairwise/select_judged.sql).
create or replace macro pair_texts_in(collection, subset) as table
select t.*
from pair_texts as t
where t.collection_id = collection
  and (
      subset is null
      or t.query_id in (
          select s.query_id from subset_topics as s where s.collection_id = collection and s.subset_name = subset
      )
  )
