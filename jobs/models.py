import uuid

from django.conf import settings
from django.db import models

from courses.models import Assignment, Dataset


class Status(models.TextChoices):
    QUEUED = "queued", "Waiting to be sent to the cluster"
    SUBMITTING = "submitting", "Being sent to the cluster"
    PENDING = "pending", "Waiting in the cluster queue"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    REJECTED = "rejected", "Refused by the cluster"


TERMINAL = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED, Status.REJECTED})
ACTIVE_IN_SLURM = frozenset({Status.PENDING, Status.RUNNING})
FINISHED_SLURM = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})

# The only status changes there are. Services apply them with compare-and-set.
TRANSITIONS: dict[str, frozenset[str]] = {
    Status.QUEUED: frozenset({Status.SUBMITTING, Status.CANCELLED}),
    Status.SUBMITTING: frozenset({Status.QUEUED, Status.PENDING, Status.REJECTED, Status.CANCELLED}),
    Status.PENDING: frozenset({Status.RUNNING, *FINISHED_SLURM}),
    Status.RUNNING: frozenset({Status.PENDING, *FINISHED_SLURM}),
    Status.COMPLETED: frozenset(),
    Status.FAILED: frozenset(),
    Status.CANCELLED: frozenset(),
    Status.REJECTED: frozenset(),
}


class Job(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="jobs")
    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="jobs")
    run_as = models.CharField(max_length=32, help_text="Cluster username the job runs as.")
    parameters = models.JSONField(default=dict)
    dataset = models.ForeignKey(Dataset, null=True, blank=True, on_delete=models.SET_NULL)
    gpus = models.PositiveSmallIntegerField()
    cpus = models.PositiveSmallIntegerField()
    mem_mb = models.PositiveIntegerField()
    minutes = models.PositiveIntegerField()
    account = models.CharField(max_length=64)
    partition = models.CharField(max_length=64, blank=True)
    script = models.TextField(help_text="The exact batch script submitted.")
    workdir = models.CharField(max_length=500)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    slurm_job_id = models.CharField(max_length=32, blank=True, db_index=True)
    slurm_state = models.CharField(max_length=32, blank=True)
    reason = models.CharField(max_length=200, blank=True)
    queue_position = models.PositiveIntegerField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    exit_signal = models.IntegerField(null=True, blank=True)
    message = models.TextField(blank=True, help_text="What the portal or Slurm last said about this job.")
    submit_attempts = models.PositiveSmallIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    elapsed_seconds = models.PositiveIntegerField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True, help_text="Last time Slurm answered about it.")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status"]), models.Index(fields=["user", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.assignment} job {self.uuid}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def can_cancel(self) -> bool:
        return not self.is_terminal and not self.cancel_requested

    @property
    def slurm_name(self) -> str:
        return f"lq-{self.uuid}"

    @property
    def stdout_name(self) -> str:
        return "job.out"

    @property
    def stderr_name(self) -> str:
        return "job.err"


class JobEvent(models.Model):
    """One status change (or notable happening) in a job's life, with its cause."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(auto_now_add=True)
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16, blank=True)
    cause = models.TextField()
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"{self.from_status}->{self.to_status}: {self.cause}"
