-- A part of a fanned-out judge run is still being worked on (tasks/judge/fan_out.py).
insert into judge_part_beats (run_id, part, flow_run_id, host, beat_at)
values ($run_id, $part, $flow_run_id, $host, $beat_at)
