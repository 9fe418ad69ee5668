-- pair_texts_of(pairs, passage_texts): each pair of the table or view named `pairs` (collection_id, query_id,
-- doc_id, ...) with its query text, its passage text from the one named `passage_texts` (collection_id, doc_id,
-- text), and text_sha: the first 16 hex digits of the sha256 of query text, unit separator, passage text. A pair
-- without both texts is left out. pair_texts (the qrels pairs) and pool_pair_texts (judge-run's pools) use it, so
-- a judgment's text_sha means the same whichever pairs it came from.
create or replace macro pair_texts_of(pairs, passage_texts) as table
select
    x.*,
    qu.text as query_text,
    p.text as passage_text,
    left(sha256(qu.text || chr(31) || p.text), 16) as text_sha
from query_table(pairs) as x
inner join queries as qu on qu.collection_id = x.collection_id and qu.query_id = x.query_id
inner join query_table(passage_texts) as p on p.collection_id = x.collection_id and p.doc_id = x.doc_id
