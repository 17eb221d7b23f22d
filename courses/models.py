import uuid

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

slurm_name_validator = RegexValidator(
    r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$",
    "Use letters, digits, '_', '.' or '-' (as Slurm names allow).",
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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["code", "term"]

    def __str__(self) -> str:
        return f"{self.code} ({self.term})"


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
    datasets = models.ManyToManyField(Dataset, blank=True, related_name="assignments")
    gpus = models.PositiveSmallIntegerField(default=1)
    cpus = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    mem_mb = models.PositiveIntegerField(default=2000, validators=[MinValueValidator(100)])
    minutes = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    max_attempts = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Most jobs (attempts) one student may submit; empty for no limit."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["course", "title"]
        constraints = [models.UniqueConstraint(fields=["course", "slug"], name="assignment_slug_per_course")]

    def __str__(self) -> str:
        return self.title

    @property
    def default_resources(self) -> dict[str, int]:
        return {"gpus": self.gpus, "cpus": self.cpus, "mem_mb": self.mem_mb, "minutes": self.minutes}


def starter_file_path(instance: "StarterFile", filename: str) -> str:
    return f"starter/{instance.assignment.uuid}/{filename}"


class StarterFile(models.Model):
    """A file copied into every job directory of an assignment before it runs."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="starter_files")
    name = models.CharField(max_length=255)
    file = models.FileField(upload_to=starter_file_path)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["assignment", "name"], name="starter_name_per_assignment")]

    def __str__(self) -> str:
        return self.name


class Hint(models.Model):
    """An instructor's advice shown on failed jobs whose log or state matches."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="hints")
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.CASCADE, related_name="hints",
        help_text="Empty: applies to every assignment of the course.",
    )  # fmt: skip
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
