"""Wizard pages: workload, model, budget. Pages never call the core; they edit a scenario."""
