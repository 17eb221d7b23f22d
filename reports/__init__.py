"""Course usage reports: Slurm accounting copied into UsageRecord, aggregated in the database,
and reconciled against what the portal itself believes about its jobs."""
