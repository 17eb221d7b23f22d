import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Coalesce

import slurm
from courses.clusters import is_federated
from courses.models import Assignment, AssignmentVersion, Dataset
from courses.scripting import STDERR_NAME, STDOUT_NAME


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
RETRYABLE = frozenset({Status.FAILED, Status.CANCELLED, Status.REJECTED})
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
    qos = models.CharField(max_length=64, blank=True)
    reservation = models.CharField(max_length=64, blank=True, help_text="The lab session's Slurm reservation.")
    script = models.TextField(help_text="The exact batch script submitted.")
    assignment_version = models.ForeignKey(
        AssignmentVersion,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="jobs",
        help_text="The version of the assignment's script this job runs (empty: made before versions were kept).",
    )
    workdir = models.CharField(max_length=500)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    slurm_job_id = models.CharField(max_length=32, blank=True, db_index=True)
    cluster = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="The cluster it was sent to; empty: the portal's own.",
    )
    ran_on = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="The cluster it started on, as squeue said (for a federated job, the member that ran it); empty: "
        "not seen running.",
    )
    slurm_state = models.CharField(max_length=32, blank=True)
    reason = models.CharField(max_length=200, blank=True)
    queue_position = models.PositiveIntegerField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    exit_signal = models.IntegerField(null=True, blank=True)
    message = models.TextField(blank=True, help_text="What the portal or Slurm last said about this job.")
    submit_attempts = models.PositiveSmallIntegerField(default=0)
    # Dispatches that failed on the portal's side (jobs.dispatch.local_failure); enough of them refuse the job.
    local_failures = models.PositiveSmallIntegerField(default=0)
    # A task for this job could not be sent (the broker was down): the sweep sends it without waiting.
    enqueue_failed = models.BooleanField(default=False)
    # "host:pid" of the worker process sending the job (jobs.dispatch), to recover it at once if that dies.
    dispatch_owner = models.CharField(max_length=200, blank=True)
    cancel_requested = models.BooleanField(default=False)
    cancelled_by = models.CharField(max_length=64, blank=True, help_text="Who Slurm says cancelled it.")
    explanation_key = models.CharField(max_length=64, blank=True, db_index=True)
    accounting = models.JSONField(default=dict, blank=True, help_text="Slurm's accounting record (sacct).")

    attempt = models.PositiveSmallIntegerField(default=1)
    late = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Submitted after the assignment's due date and grace period (a retry keeps its attempt's).",
    )
    retry_of = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="retried_by",
        help_text="The attempt this one retries; each attempt is retried at most once.",
    )
    resubmit_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="resubmissions",
        help_text="The attempt this one was edited from (Edit and resubmit); an attempt may be edited many times.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who pressed submit or retry, when not the student (e.g. a TA).",
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    elapsed_seconds = models.PositiveIntegerField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True, help_text="Last time Slurm answered about it.")
    left_queue_at = models.DateTimeField(
        null=True, blank=True, help_text="When it left Slurm's queue while its final state was not known yet."
    )

    # Slurm's expected start while the job waits (squeue %S of a PENDING job); None when Slurm gives none.
    expected_start_at = models.DateTimeField(null=True, blank=True)
    # What the finished job used (slurm.usage, collected by the sync). None: not measured or not collected yet.
    cpu_seconds_used = models.FloatField(null=True, blank=True)
    max_rss_mb = models.PositiveIntegerField(null=True, blank=True, help_text="Peak resident memory of any step.")
    gpu_util_percent = models.FloatField(null=True, blank=True, help_text="Empty: the cluster does not measure it.")
    gpu_mem_mb = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the cluster does not measure it.")
    usage_collected_at = models.DateTimeField(
        null=True, blank=True, help_text="When the sync read what the finished job used from Slurm's accounting."
    )

    # The one-time key of the submission form it came from (blank for retries and older jobs).
    submission_key = models.CharField(max_length=32, blank=True)
    # When its job directory and staged uploads were removed (jobs.retention; docs/records.md). The row stays.
    files_purged_at = models.DateTimeField(
        null=True, blank=True, help_text="When the job's files were removed under the retention policy."
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status"]),
            models.Index(fields=["user", "-created_at"]),
            # The course job lists show the newest few hundred of a course's thousands of jobs.
            models.Index(fields=["-created_at"], name="job_newest_first"),
            # The sync's finished jobs whose usage it has not read yet (jobs.dispatch._collect_usage).
            models.Index(
                fields=["-ended_at"], condition=models.Q(usage_collected_at__isnull=True), name="job_usage_uncollected"
            ),
            # The retention purge's due jobs, oldest first (jobs.retention.jobs_with_files_older_than): the jobs
            # whose files are kept, by when they finished, so a purge reads the due ones, not the whole table.
            models.Index(
                Coalesce("ended_at", "updated_at"),
                "id",
                condition=models.Q(files_purged_at__isnull=True),
                name="job_files_kept",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "submission_key"],
                condition=~models.Q(submission_key=""),
                name="job_one_per_submission_form",
            )
        ]

    def __str__(self) -> str:
        return f"{self.assignment} job {self.uuid}"

    @property
    def title(self) -> str:
        """How pages name the job: its assignment and attempt, "Lab 1: Hello, GPU · attempt 2"."""
        return f"{self.assignment.title} · attempt {self.attempt}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def is_federated(self) -> bool:
        """Sent to the federation (LABQUEUE_SLURM_FEDERATION): offered to every cluster of it."""
        return is_federated(self.cluster)

    @property
    def federated_id_parts(self) -> tuple[int, int] | None:
        """(origin cluster's id, job id there) of a federation-wide Slurm job id; None otherwise."""
        return slurm.federated_job_id_parts(self.slurm_job_id) if self.slurm_job_id else None

    @property
    def can_retry(self) -> bool:
        return self.status in RETRYABLE

    @property
    def resources(self) -> dict[str, int]:
        return {"gpus": self.gpus, "cpus": self.cpus, "mem_mb": self.mem_mb, "minutes": self.minutes}

    @property
    def can_cancel(self) -> bool:
        return not self.is_terminal and not self.cancel_requested

    @property
    def slurm_name(self) -> str:
        return f"lq-{self.uuid}"

    @property
    def stdout_name(self) -> str:
        return STDOUT_NAME

    @property
    def stderr_name(self) -> str:
        return STDERR_NAME


class InteractiveSession(models.Model):
    """The JupyterLab server an interactive job runs, as the worker found it (jobs.sessions).

    The job writes where it listens into its folder (SESSION_FILE); the worker reads it and records it here once
    the server answers, and the proxy's auth check (jobs.session_views) reads only this row and the job's status.
    The address and token never reach a browser.
    """

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="session")
    host = models.CharField(max_length=255, blank=True)
    port = models.PositiveIntegerField(null=True, blank=True)
    token = models.CharField(max_length=128, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True, help_text="When the notebook server first answered.")
    last_activity_at = models.DateTimeField(
        null=True, blank=True, help_text="The notebook server's own last activity (its /api/status)."
    )
    checked_at = models.DateTimeField(null=True, blank=True, help_text="When the worker last asked the server.")
    stopped_idle = models.BooleanField(default=False, help_text="The portal stopped it for being idle.")

    def __str__(self) -> str:
        return f"session of {self.job}"

    @property
    def is_open(self) -> bool:
        return self.ready_at is not None and self.job.status == Status.RUNNING


class CheckStatus(models.TextChoices):
    QUEUED = "queued", "Waiting to be sent to the cluster"
    SUBMITTING = "submitting", "Being sent to the cluster"
    PENDING = "pending", "Waiting in the cluster queue"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Could not finish"
    REFUSED = "refused", "Could not be sent"


CHECK_ACTIVE_IN_SLURM = frozenset({CheckStatus.PENDING, CheckStatus.RUNNING})
# The only status changes a check has (jobs.checks applies them with compare-and-set).
CHECK_TRANSITIONS: dict[str, frozenset[str]] = {
    CheckStatus.QUEUED: frozenset({CheckStatus.SUBMITTING, CheckStatus.REFUSED}),
    CheckStatus.SUBMITTING: frozenset({CheckStatus.QUEUED, CheckStatus.PENDING, CheckStatus.REFUSED}),
    CheckStatus.PENDING: frozenset({CheckStatus.RUNNING, CheckStatus.DONE, CheckStatus.FAILED}),
    CheckStatus.RUNNING: frozenset({CheckStatus.PENDING, CheckStatus.DONE, CheckStatus.FAILED}),
    CheckStatus.DONE: frozenset(),
    CheckStatus.FAILED: frozenset(),
    CheckStatus.REFUSED: frozenset(),
}


class CheckRun(models.Model):
    """The assignment's check of one completed job (jobs.checks): a short Slurm job of its own, run as the
    student after the job, whose output file (named with `token`, chosen when the check is sent) gives the
    results. Feedback, not tamper-proof grading: it runs with the student's rights on the job's files."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="check_run")
    status = models.CharField(max_length=16, choices=CheckStatus.choices, default=CheckStatus.QUEUED)
    token = models.CharField(max_length=32, blank=True, help_text="Names the check's script and output files.")
    slurm_job_id = models.CharField(max_length=32, blank=True, db_index=True)
    slurm_state = models.CharField(max_length=32, blank=True)
    results = models.JSONField(
        default=list, blank=True, help_text='The check lines: [{"passed": true, "name": "...", "message": "..."}].'
    )
    score = models.DecimalField(max_digits=9, decimal_places=2, null=True, blank=True)
    max_score = models.DecimalField(max_digits=9, decimal_places=2, null=True, blank=True)
    message = models.TextField(blank=True, help_text="What the portal says about the check, when it did not run.")
    enqueue_failed = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status"], name="checkrun_status")]

    def __str__(self) -> str:
        return f"Check of job {self.job_id}: {self.status}"

    @property
    def is_finished(self) -> bool:
        return not CHECK_TRANSITIONS[self.status]

    @property
    def script_name(self) -> str:
        return f"check-{self.token}.sh"

    @property
    def output_name(self) -> str:
        return f"check-{self.token}.out"


class JobNote(models.Model):
    """A note from course staff on a job, visible to the student."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="notes")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    text = models.TextField(max_length=4000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"Note by {self.author} on {self.job_id}"


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


class Heartbeat(models.Model):
    """When a periodic worker task last finished its work (the job-status sync), for /readyz."""

    name = models.CharField(max_length=40, primary_key=True)
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.at:%Y-%m-%d %H:%M:%S}"


def cluster_heartbeat_name(cluster: str) -> str:
    """The Heartbeat row the sync stamps each time the other cluster `cluster` answered it."""
    return f"cluster:{cluster}"


class NotificationPreference(models.Model):
    """Which e-mails a person wants about jobs (jobs.notifications). No row: the defaults."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    notify_finished = models.BooleanField(default=False, help_text="Mail when a job completes.")
    notify_failed = models.BooleanField(default=True, help_text="Mail when a job fails.")
    notify_refused = models.BooleanField(default=True, help_text="Mail when the cluster or portal refuses a job.")
    daily_digest = models.BooleanField(default=False, help_text="TAs and instructors: a daily mail of new failures.")
    address_link_sent_at = models.DateTimeField(
        null=True, blank=True, help_text="When the last address-verification mail was sent (one a minute)."
    )

    def __str__(self) -> str:
        return f"Notification choices of {self.user}"


class JobNotification(models.Model):
    """One mail sent about one job's end: its (job, event) row makes sending it a second time impossible."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=16)
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "event"], name="one_notification_per_job_event")]

    def __str__(self) -> str:
        return f"{self.event} mail for job {self.job_id}"


class FailureDigest(models.Model):
    """One day's failure digest to one TA or instructor: at most one a day; `until` is where the next starts."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    until = models.DateTimeField()
    failures = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "day"], name="one_failure_digest_per_day")]

    def __str__(self) -> str:
        return f"Failure digest for {self.user} on {self.day}"
