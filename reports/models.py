from django.db import models

from jobs.models import Job


class UsageRecord(models.Model):
    """The portal's own copy of one Slurm allocation record (a `sacct -X` row).

    Unique per (cluster, slurm_job_id, submitted_at), the same key slurmdbd uses for its
    job table: job ids start again after a cluster reset, and a requeued run gets a new
    submit time, but one run of one job on one cluster always has one submit time.
    """

    cluster = models.CharField(max_length=64)
    slurm_job_id = models.CharField(max_length=32)
    submitted_at = models.DateTimeField()
    job = models.ForeignKey(
        Job,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="usage_records",
        help_text="The portal job it belongs to, found by the lq-<uuid> job name; empty for jobs made outside.",
    )
    job_name = models.CharField(max_length=200, blank=True)
    user = models.CharField(max_length=64, help_text="Cluster username.")
    account = models.CharField(max_length=64)
    partition = models.CharField(max_length=64, blank=True)
    qos = models.CharField(max_length=64, blank=True)
    reservation = models.CharField(max_length=64, blank=True)
    state = models.CharField(max_length=32)
    exit_code = models.IntegerField(null=True, blank=True)
    exit_signal = models.IntegerField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    elapsed_seconds = models.PositiveIntegerField(default=0)
    gpus = models.PositiveIntegerField(default=0, help_text="gres/gpu in AllocTRES.")
    cpus = models.PositiveIntegerField(default=0)
    mem_mb = models.PositiveIntegerField(default=0)
    billing = models.PositiveIntegerField(default=0, help_text="Slurm billing units (TRESBillingWeights), not money.")
    ingested_at = models.DateTimeField(help_text="When an ingest first wrote this row.")

    class Meta:
        ordering = ["submitted_at", "slurm_job_id"]
        db_table = "jobs_usagerecord"  # the table it had in jobs: the move (migration 0001) changed no row
        constraints = [
            models.UniqueConstraint(fields=["cluster", "slurm_job_id", "submitted_at"], name="one_usage_record_per_run")
        ]
        indexes = [
            models.Index(fields=["account", "started_at"], name="usage_account_start"),
            models.Index(fields=["account", "user"], name="usage_account_user"),
            # A report's range (reports.queries.usage_records_in_range: not ended before its start): the usage
            # overview of every account reads the records of its range, not five years of them.
            models.Index(fields=["ended_at"], name="usage_ended"),
        ]

    def __str__(self) -> str:
        return f"Slurm job {self.slurm_job_id} on {self.cluster} ({self.state})"


class AccountingCursor(models.Model):
    """How far Slurm's accounting has been copied into UsageRecord, per cluster.

    It moves only after a successful ingest, so a cycle that finds slurmdbd down
    changes nothing and the next one asks for the whole gap again.
    """

    cluster = models.CharField(max_length=64, unique=True)
    ingested_until = models.DateTimeField()
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "jobs_accountingcursor"  # the table it had in jobs (see UsageRecord)

    def __str__(self) -> str:
        return f"{self.cluster}: accounting ingested until {self.ingested_until}"
