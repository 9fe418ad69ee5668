-- Journaled outcome lines of shard files, one per item (the first journaled), ready to check and merge.
create or replace temp table staged_outcomes as
select warehouse_id, run_id, {{ key_names|idents }}, {{ value_names|idents }}, status, reason, request_id, judged_at
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    warehouse_id: 'varchar', run_id: 'varchar',
{%- for c in keys %} {{ c.name|ident }}: '{{ c.type }}',{% endfor %}
{%- for c in values %} {{ c.name|ident }}: '{{ c.type }}',{% endfor %}
    status: 'varchar', reason: 'varchar', request_id: 'varchar', judged_at: 'timestamp'
})
where run_id is not null and status is not null and judged_at is not null
{%- for c in keys %} and {{ c.name|ident }} is not null{% endfor %}
qualify row_number() over (partition by run_id, {{ key_names|idents }} order by judged_at) = 1
