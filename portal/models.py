from django.contrib.auth.models import AbstractUser
from django.core.validators import RegexValidator
from django.db import models

POSIX_NAME = r"^[a-z_][a-z0-9_-]{0,31}$"

netid_validator = RegexValidator(
    POSIX_NAME,
    "A cluster username is 1-32 characters: lowercase letters, digits, '_' or '-', starting with a letter or '_'.",
)


class User(AbstractUser):
    """A person. `netid` is the cluster (POSIX) account jobs run as; it is never
    derived from `username`, which the login layer may change."""

    netid = models.CharField(
        "cluster username",
        max_length=32,
        unique=True,
        null=True,
        blank=True,
        validators=[netid_validator],
        help_text="The POSIX account on the cluster that this person's jobs run as.",
    )

    def __str__(self) -> str:
        return self.get_full_name() or self.username
