-- Imported pairs the metrics will score: in the collection's qrels, with a label 0-3.
select count(*) as n_scored
from import_rows
inner join qrels
    on qrels.collection_id = $collection_id
    and qrels.query_id = import_rows.query_id
    and qrels.doc_id = import_rows.doc_id
where import_rows.label is not null
