"""Find the bad node: run a test on each node and on pairs of nodes, rank them, flag outliers."""
