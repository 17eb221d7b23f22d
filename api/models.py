"""Personal access tokens for scripts (the API under /api/v1/, api.endpoints)."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from courses.models import Course

#: A token's text starts with this, so secret scanners (GitHub's, gitleaks) can recognise a leaked one.
TOKEN_PREFIX = "lqp_"


class Scope(models.TextChoices):
    READ_COURSES = "read:courses", "read:courses: my courses and their assignments"
    READ_JOBS = "read:jobs", "read:jobs: my jobs (and, as course staff, the course's jobs)"
    JOBS_SUBMIT = "jobs:submit", "jobs:submit: submit jobs and retry them"
    JOBS_CANCEL = "jobs:cancel", "jobs:cancel: cancel my jobs"
    READ_FILES = "read:files", "read:files: download the files of jobs I may see"
    READ_GRADEBOOK = "read:gradebook", "read:gradebook: gradebooks of the courses I teach or assist"
    READ_REPORTS = "read:reports", "read:reports: usage reports of the courses I teach or assist"


#: Scopes that reach a course only where its owner is a TA or instructor at the time of the request.
STAFF_SCOPES = frozenset({Scope.READ_GRADEBOOK, Scope.READ_REPORTS})


class PersonalToken(models.Model):
    """A token a person made on their settings page. Only the SHA-256 digest of its secret is kept: the secret
    is shown once, when it is made. Its scopes never reach further than its owner's roles at each request."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. the course repository's CI.")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token's text, in hex.")
    hint = models.CharField(max_length=12, help_text="The token's first characters, to tell tokens apart.")
    scopes = models.JSONField(default=list)
    course = models.ForeignKey(
        Course,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="When set, the token reaches this course only.",
    )
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()
