"""Code that several stages use and that is no stage of its own: the TREC readers, run files, the voting baselines,
the judgment feature streams, the fuse comparison's table. A stage may import it; it imports no stage."""
