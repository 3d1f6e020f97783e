"""Launching clusterbench across many nodes on the engines users already have: Slurm, Open MPI,
torchrun, Kubernetes (Kubeflow), dstack. Builders are pure functions returning argument lists,
scripts or manifests; only ``run``-style helpers start processes."""
