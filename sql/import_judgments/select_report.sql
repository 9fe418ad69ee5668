-- The stored report of an import.
select *
from import_reports
where run_id = $run_id
