-- Record the ingest that just published, with its source files (registered as staged_files).
insert into ingest_runs
    (ingest_run_id, collection_id, fingerprint, started_at, finished_at, n_queries, n_passages, n_qrels)
values ($ingest_run_id, $collection_id, $fingerprint, $started_at, $finished_at, $n_queries, $n_passages, $n_qrels);

insert into ingest_files (ingest_run_id, role, path, sha256, n_bytes, n_records)
select $ingest_run_id, role, path, sha256, n_bytes, n_records from staged_files;
