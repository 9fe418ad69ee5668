-- Store a probe collection's description rows (staged_probe_docs) in the transaction that publishes its texts.
delete from probe_docs where collection_id = $collection_id;
delete from probe_sets where collection_id = $collection_id;

insert into probe_sets (collection_id, source_collection_id, subset_name, n_pairs, seed, kinds, n_copies, built_at)
values ($collection_id, $source_collection_id, $subset_name, $n_pairs, $seed, $kinds, $n_copies, $built_at);

insert into probe_docs
    (collection_id, query_id, doc_id, source_doc_id, text_doc_id, kind, variant, role, baseline_doc_id, relevance)
select
    $collection_id, query_id, doc_id, source_doc_id, text_doc_id, kind, variant, role, baseline_doc_id, relevance
from staged_probe_docs;
