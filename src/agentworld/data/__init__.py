"""Data pipeline: ingest real trajectories, clean, expand, mask, split and export for training."""
