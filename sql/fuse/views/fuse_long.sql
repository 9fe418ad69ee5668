-- Every headline metric of every fused method and judge of a published fuse run, as long_from gives them for the
-- judges' own groups (metric, value, is_higher_better); personality is the method or judge (see fuse_cells.sql).
select * from long_from(cells := 'fuse_cells')
