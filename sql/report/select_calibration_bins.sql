-- Reliability-diagram bins (calibration_bins_from) of the report's groups; groups without confidences keep
-- their ten bins with n_judgments 0.
select *
from calibration_bins_from(cells := 'metric_cells_snapshot')
order by collection_id, model, run_name, cot, confidence_method, personality, bin
