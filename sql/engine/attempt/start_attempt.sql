-- A part's new attempt supersedes every earlier one: from now on only its commits are accepted.
delete from run_attempts where kind = $kind and run_id = $run_id and part = $part;

insert into run_attempts (kind, run_id, part, attempt, started_at, committed_at)
values ($kind, $run_id, $part, $attempt, $now, null)
