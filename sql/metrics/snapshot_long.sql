-- Every headline metric of the snapshot's groups, long, once: the comparison and the oracle both read it.
create or replace temp table metric_long_snapshot as
select *
from long_from(cells := 'metric_cells_snapshot')
