-- One fuse run's disagreement counts (fuse_disagreement), for the CLI.
select n_fused, n_disagree, n_fuser_right, n_majority_right, n_both_wrong
from fuse_disagreement
where fuse_run_id = $fuse_run_id
