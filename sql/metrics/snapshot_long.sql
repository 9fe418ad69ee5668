-- Every headline metric of the snapshot's groups, long (long_from), once: the comparison, the oracle and the
-- report's tables and radars read it.
create or replace temp table metric_long_snapshot as
select *
from long_from(cells := 'metric_cells_snapshot')
