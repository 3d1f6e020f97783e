"""End-to-end workloads: FSDP training, DDP gradient sync, tensor-parallel inference, scaling."""
