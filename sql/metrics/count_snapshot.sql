-- How many cells the snapshot holds (0: the filters match no judgments).
select count(*) as n_cells
from metric_cells_snapshot
