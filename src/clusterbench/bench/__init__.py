"""Benchmarks that run on every rank: each family is a subpackage with a spec table, its data
and a per-rank ``main(ctx, config)``; ``suite`` lists what ``clusterbench run`` runs."""
