-- How many cells the report snapshot holds (0: the filters match no judgments).
select count(*) as n_cells
from report_cells
