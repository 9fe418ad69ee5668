-- Judgments made elsewhere (TREC qrels-style files) imported as runs: what each import found in its file.
-- Problems are reported here, never dropped silently: counts, plus the first few examples of each kind.

create table if not exists import_reports (
    run_id              varchar primary key,   -- the judge_runs row this import created
    run_name            varchar not null unique,
    collection_id       varchar not null,
    path                varchar not null,      -- the file as given
    sha256              varchar not null,      -- of the file's bytes
    fingerprint         varchar not null,      -- sha256 over the file's sha256 and the import options
    n_lines             integer not null,      -- non-blank lines read
    n_judgments         integer not null,      -- distinct pairs stored as judgments (first line of a repeated pair)
    n_scored            integer not null,      -- of those: in the qrels, with a label 0-3 (what the metrics score)
    n_bad_labels        integer not null,      -- label not an integer 0-3: stored with label null (a label failure)
    n_bad_confidences   integer not null,      -- confidence not a number 0-100: stored with confidence null
    n_duplicates        integer not null,      -- lines repeating an earlier pair: the first line is kept
    n_not_in_qrels      integer not null,      -- file pairs absent from the collection's qrels (not scored)
    n_missing_from_file integer not null,      -- qrels pairs of the file's topics that the file does not judge
    examples            json not null,         -- {issue: [{line, query_id, doc_id, value}, ...]}, first 5 of each
    imported_at         timestamp not null
);
