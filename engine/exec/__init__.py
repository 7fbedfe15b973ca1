"""Running the planned actions: the scheduler, the per-action pipeline, runners, stores."""
