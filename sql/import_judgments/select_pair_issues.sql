-- Pairs the imported file (registered as import_rows) and the collection's qrels do not share:
-- missing_from_file: qrels pairs of the topics the file judges, that the file does not judge;
-- not_in_qrels: file pairs that the collection's qrels lack (stored, but no metric can score them).
-- One row per issue: its count and its first five examples (in file order, or by id for missing pairs).
with imported as (
    select * from import_rows
),

topic_qrels as (
    select query_id, doc_id
    from qrels
    where collection_id = $collection_id
        and query_id in (select query_id from imported)
),

missing as (
    select topic_qrels.query_id, topic_qrels.doc_id
    from topic_qrels
    anti join imported using (query_id, doc_id)
),

unknown as (
    select imported.line_no, imported.query_id, imported.doc_id
    from imported
    anti join (select query_id, doc_id from qrels where collection_id = $collection_id) as known
        using (query_id, doc_id)
),

final as (
    select
        'missing_from_file' as issue,
        count(*) as n_pairs,
        coalesce(
            list({'line': null::integer, 'query_id': query_id, 'doc_id': doc_id, 'value': null::varchar}
                order by query_id, doc_id)[1:5],
            []
        ) as examples
    from missing
    union all
    select
        'not_in_qrels' as issue,
        count(*) as n_pairs,
        coalesce(
            list({'line': line_no, 'query_id': query_id, 'doc_id': doc_id, 'value': null::varchar}
                order by line_no)[1:5],
            []
        ) as examples
    from unknown
)

select issue, n_pairs, to_json(examples)::varchar as examples from final
