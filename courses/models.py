import uuid
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

slurm_name_validator = RegexValidator(
    r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$",
    "Use letters, digits, '_', '.' or '-' (as Slurm names allow).",
)


#: A course's resource policy: what an instructor sets on the policy page and a new term keeps (the limits, the
#: budget, the partition and QOS; not the names or the Slurm account).
def other_cluster_validator(value: str) -> None:
    """A course runs on the portal's own cluster (empty) or on one of the site's other clusters."""
    others = settings.LABQUEUE_SLURM_OTHER_CLUSTERS
    if value and value not in others and value != settings.LABQUEUE_SLURM_FEDERATION:
        listed = ", ".join(others) if others else "none is set"
        raise ValidationError(
            f"'{value}' is not one of this site's other clusters (LABQUEUE_SLURM_OTHER_CLUSTERS: {listed}). Leave it "
            "empty for the portal's own cluster"
            + (
                f", or name the federation {settings.LABQUEUE_SLURM_FEDERATION}."
                if settings.LABQUEUE_SLURM_FEDERATION
                else "."
            )
        )


COURSE_POLICY_FIELDS = (
    "max_gpus_per_job",
    "max_cpus_per_job",
    "max_mem_mb_per_job",
    "max_minutes_per_job",
    "max_running_jobs_per_student",
    "max_queued_jobs_per_student",
    "gpu_hours_per_student",
    "max_gpus_course",
    "partition",
    "qos",
    "staff_may_open_sessions",
)


class Course(models.Model):
    slug = models.SlugField(unique=True, help_text="Short name used in addresses, e.g. cs101-2026fa.")
    code = models.CharField(max_length=32)
    title = models.CharField(max_length=200)
    term = models.CharField(max_length=32)
    slurm_account = models.CharField(max_length=64, validators=[slurm_name_validator])
    partition = models.CharField(max_length=64, blank=True, validators=[slurm_name_validator])
    max_gpus_per_job = models.PositiveSmallIntegerField(default=1)
    max_cpus_per_job = models.PositiveSmallIntegerField(default=4, validators=[MinValueValidator(1)])
    max_mem_mb_per_job = models.PositiveIntegerField(default=16000, validators=[MinValueValidator(100)])
    max_minutes_per_job = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1)])
    # The course policy (empty = no limit). Written into Slurm too by `reconcile_associations` (clusterpolicy/).
    max_running_jobs_per_student = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Jobs one student may have running at once; more wait in the queue.",
    )
    max_queued_jobs_per_student = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Jobs one student may have waiting or running at once; more are refused.",
    )
    gpu_hours_per_student = models.PositiveIntegerField(
        null=True, blank=True, help_text="GPU-hours each student may use this term."
    )
    max_gpus_course = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="GPUs the whole course may use at once.",
    )
    qos = models.CharField(
        max_length=64,
        blank=True,
        validators=[slurm_name_validator],
        help_text="Slurm QOS for the course's jobs; empty: the portal-wide LABQUEUE_COURSE_QOS, if any.",
    )
    cluster = models.CharField(
        max_length=64,
        blank=True,
        db_default="",
        default="",
        validators=[other_cluster_validator],
        help_text="Another cluster of the site the course's jobs run on (LABQUEUE_SLURM_OTHER_CLUSTERS); "
        "empty: the portal's own cluster; the federation's name (LABQUEUE_SLURM_FEDERATION): offered to every cluster "
        "of the federation, runs where it fits first.",
    )
    staff_may_open_sessions = models.BooleanField(
        default=False,
        db_default=False,
        verbose_name="Staff may open students' notebook sessions",
        help_text="TAs and instructors may open a student's running JupyterLab session (each opening is logged). "
        "Off: only the student who started it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["code", "term"]

    def __str__(self) -> str:
        return f"{self.code} ({self.term})"


class CourseCeiling(models.Model):
    """Ceilings operations staff set for one course (Django admin only; instructors never see this form).

    The course policy cannot exceed them and `reconcile_associations` never writes more into Slurm. An
    empty field uses the site-wide LABQUEUE_CEILING_* setting; empty lists use LABQUEUE_ALLOWED_QOS and
    LABQUEUE_ALLOWED_PARTITIONS.
    """

    course = models.OneToOneField(Course, on_delete=models.CASCADE, related_name="ceiling")
    gpus_per_job = models.PositiveSmallIntegerField(null=True, blank=True)
    cpus_per_job = models.PositiveSmallIntegerField(null=True, blank=True)
    mem_mb_per_job = models.PositiveIntegerField(null=True, blank=True)
    minutes_per_job = models.PositiveIntegerField(null=True, blank=True)
    jobs_per_student = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Running jobs, and waiting or running jobs, per student."
    )
    gpu_hours_per_student = models.PositiveIntegerField(null=True, blank=True)
    gpus_per_course = models.PositiveSmallIntegerField(null=True, blank=True)
    allowed_qos = models.CharField(
        max_length=500, blank=True, help_text="Comma-separated QOS names the course may use, e.g. coursework."
    )
    allowed_partitions = models.CharField(
        max_length=500, blank=True, help_text="Comma-separated partitions the course may use, e.g. gpu,debug."
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Ceilings of {self.course}"


class Role(models.TextChoices):
    STUDENT = "student", "Student"
    TA = "ta", "Teaching assistant"
    INSTRUCTOR = "instructor", "Instructor"


STAFF_ROLES = (Role.TA, Role.INSTRUCTOR)


class Enrollment(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="enrollments")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STUDENT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "course"], name="one_enrollment_per_course")]

    def __str__(self) -> str:
        return f"{self.user} in {self.course} as {self.get_role_display()}"


class Dataset(models.Model):
    """A read-only data set on the cluster that a course has approved for its jobs."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=100)
    path = models.CharField(max_length=500, help_text="Absolute path on the cluster.")
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["course", "name"], name="dataset_name_per_course")]

    def __str__(self) -> str:
        return self.name


class LatePolicy(models.TextChoices):
    MARK = "mark", "Accept late submissions and mark them late"
    REFUSE = "refuse", "Refuse submissions after the due date"


class Assignment(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="assignments")
    slug = models.SlugField()
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    script_template = models.TextField(
        help_text="The body of a bash batch script. Parameters are shell variables, e.g. $EPOCHS."
    )
    parameters = models.JSONField(default=list, blank=True)
    check_script = models.TextField(
        blank=True,
        db_default="",
        help_text="Optional: a bash script run after each completed job, as the student, in the job's folder "
        "(1 CPU, 5 minutes). Each line `CHECK pass <name>: <message>` or `CHECK fail <name>: <message>` it prints, "
        "and one `SCORE <points>/<max>`, are shown on the job page. No #SBATCH lines.",
    )
    datasets = models.ManyToManyField(Dataset, blank=True, related_name="assignments")
    gpus = models.PositiveSmallIntegerField(default=1)
    cpus = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    mem_mb = models.PositiveIntegerField(default=2000, validators=[MinValueValidator(100)])
    minutes = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    max_attempts = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Most jobs (attempts) one student may submit; empty for no limit."
    )
    opens_at = models.DateTimeField(
        null=True, blank=True, help_text="Optional: students can submit from this moment on. Empty: open now."
    )
    due_at = models.DateTimeField(null=True, blank=True, help_text="Optional: the due date. Empty: no due date.")
    late_policy = models.CharField(
        max_length=10,
        choices=LatePolicy.choices,
        default=LatePolicy.MARK,
        db_default=LatePolicy.MARK,
        help_text="What happens to a submission after the due date (and the grace period).",
    )
    grace_minutes = models.PositiveIntegerField(
        default=0,
        db_default=0,
        help_text="Minutes after the due date during which a submission still counts as on time.",
    )
    interactive = models.BooleanField(
        default=False,
        db_default=False,
        verbose_name="Interactive notebook",
        help_text="Students start a JupyterLab session on a GPU instead of a batch job; it lasts at most the "
        "wall time. The script runs first, to prepare the session (e.g. module load cuda).",
    )
    interactive_labs_only = models.BooleanField(
        default=False,
        db_default=False,
        verbose_name="Sessions only during labs",
        help_text="Interactive assignments: students may start a session only while one of the course's labs is on.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["course", "title"]
        constraints = [models.UniqueConstraint(fields=["course", "slug"], name="assignment_slug_per_course")]

    def __str__(self) -> str:
        return self.title

    @property
    def closes_at(self):
        """The last moment a submission is on time: the due date plus the grace period (None: no due date)."""
        return self.due_at + timedelta(minutes=self.grace_minutes) if self.due_at else None

    @property
    def default_resources(self) -> dict[str, int]:
        return {"gpus": self.gpus, "cpus": self.cpus, "mem_mb": self.mem_mb, "minutes": self.minutes}


class AssignmentVersion(models.Model):
    """One saved version of an assignment: its script template, parameters, starter files and data sets, kept
    for good. Jobs record the version they ran, and a retry runs that version again."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    script_template = models.TextField()
    parameters = models.JSONField(default=list, blank=True)
    check_script = models.TextField(
        blank=True, db_default="", help_text="The check run after each completed job (empty: none)."
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who saved it; empty when made outside the assignment form (e.g. before versions were kept).",
    )
    datasets = models.ManyToManyField(
        Dataset, blank=True, related_name="+", help_text="The data sets a job of this version may use."
    )
    contents_digest = models.CharField(
        max_length=64,
        blank=True,
        db_default="",
        editable=False,
        help_text="SHA-256 of the contents above, to compare with the assignment; empty for older versions.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["assignment", "-number"]
        constraints = [models.UniqueConstraint(fields=["assignment", "number"], name="one_number_per_version")]

    def __str__(self) -> str:
        return f"{self.assignment} v{self.number}"


def starter_file_path(instance: "StarterFile", filename: str) -> str:
    return f"starter/{instance.assignment.uuid}/{filename}"


class StarterFile(models.Model):
    """A file of the assignment as the instructor has it now. Each version keeps its own record of the starter
    files (VersionStarterFile): a job's directory gets those of the version it records."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="starter_files")
    name = models.CharField(max_length=255)
    file = models.FileField(upload_to=starter_file_path)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["assignment", "name"], name="starter_name_per_assignment")]

    def __str__(self) -> str:
        return self.name


class VersionStarterFile(models.Model):
    """A starter file as one assignment version has it: its name, the stored file (never written over: a
    replaced starter file is stored under a new name) and the SHA-256 of its bytes, checked again by the
    worker before the file is copied into a job's directory."""

    version = models.ForeignKey(AssignmentVersion, on_delete=models.CASCADE, related_name="starter_files")
    name = models.CharField(max_length=255)
    file = models.FileField()
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["version", "name"], name="starter_name_per_version")]

    def __str__(self) -> str:
        return f"{self.name} ({self.version})"


class Hint(models.Model):
    """An instructor's advice shown on failed jobs whose log or state matches."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="hints")
    assignment = models.ForeignKey(
        Assignment,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="hints",
        help_text="Empty: applies to every assignment of the course.",
    )
    pattern = models.CharField(
        max_length=200, blank=True, help_text="A regular expression searched in the end of the job's output."
    )
    state = models.CharField(
        max_length=32, blank=True, help_text="Only for jobs that ended in this Slurm state (e.g. TIMEOUT)."
    )
    message = models.TextField(max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return self.message[:60]


class LabSeries(models.Model):
    """A weekly lab: one LabSession per week from the first date to the last, less the skipped dates, all made
    (and checked) at once. Each session is then a lab of its own: reserved, cancelled or ended by itself."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="lab_series")
    weekday = models.PositiveSmallIntegerField(help_text="0 Monday ... 6 Sunday.")
    start_time = models.TimeField(help_text="In the portal's time zone (LABQUEUE_TIME_ZONE).")
    minutes = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    first_date = models.DateField()
    last_date = models.DateField()
    skipped = models.JSONField(default=list, blank=True, help_text="Dates (YYYY-MM-DD) without a lab.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.course.code} weekly lab from {self.first_date}"


class LabSession(models.Model):
    """A scheduled lab: the course gets a Slurm reservation of whole nodes (or GPUs) for its duration.

    States: scheduled -> reserved (the reservation exists in Slurm) -> ended; scheduled or reserved ->
    cancelled; scheduled -> failed (Slurm refused the reservation; `message` says why).
    """

    class State(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        RESERVED = "reserved", "Reserved on the cluster"
        ENDED = "ended", "Ended"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Could not be reserved"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="lab_sessions")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    nodes = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    gpus = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Only with LABQUEUE_RESERVATION_STRATEGY=gpus (Slurm 23.11+)."
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.SCHEDULED)
    reservation_name = models.CharField(max_length=64, blank=True)
    reserved_nodes = models.CharField(max_length=200, blank=True, help_text="Nodes Slurm reserved, e.g. gpu2.")
    reservation_active = models.BooleanField(default=False, help_text="The reservation exists in Slurm.")
    reserved_on = models.CharField(
        max_length=64,
        blank=True,
        db_default="",
        default="",
        editable=False,
        help_text="The cluster Slurm holds the reservation on (its ClusterName), kept when the course moves; empty: "
        "not reserved yet, or reserved before the portal kept it (the course's cluster then).",
    )
    message = models.TextField(blank=True)
    series = models.ForeignKey(
        LabSeries, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions", help_text="A weekly lab."
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["starts_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(ends_at__gt=models.F("starts_at")), name="lab_ends_after_start")
        ]

    def __str__(self) -> str:
        return f"{self.course.code} lab {self.starts_at:%Y-%m-%d %H:%M}"

    @property
    def is_open(self) -> bool:
        return self.state in (self.State.SCHEDULED, self.State.RESERVED)

    @property
    def is_on(self) -> bool:
        """The lab is running now and its reservation exists."""
        return self.state == self.State.RESERVED and self.starts_at <= timezone.now() < self.ends_at
