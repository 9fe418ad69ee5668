-- Planned items of this call (gate_items) whose outcome is a failure (unreadable after the regenerations, or refused).
select count(*) from gate_items where status != 'ok' and is_planned
