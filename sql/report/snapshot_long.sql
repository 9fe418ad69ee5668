-- Every headline metric of the report's groups, long (long_from), once: the tables and radars read it.
create or replace temp table report_long as
select *
from long_from(cells := 'report_cells')
