"""What is sized: GPU and model specs, their bundled catalogs, the workload and the serving engines."""
