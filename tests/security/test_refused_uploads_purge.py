"""Files chosen on a refused form are kept for the session that chose them, and no longer: once that session
has ended nobody can use them, so the purge removes them and counts them (they used to fill the disk, untouched
by the retention purge)."""

import os
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from jobs.tasks import kept_uploads_purge
from tests.jobs.test_uploads import refused_with
from tests.service_account import manage_in_process

pytestmark = pytest.mark.django_db

MEGABYTE = b"x" * (1024 * 1024)


def kept_folder(client, name: str) -> Path:
    token = refused_with(client, name, MEGABYTE).context["upload_token"]
    folder = Path(django_settings.MEDIA_ROOT) / "pending" / token
    assert (folder / name).stat().st_size == len(MEGABYTE)
    return folder


def session_ended(folder: Path) -> None:
    """Nothing in the folder changed for longer than a session lasts."""
    then = time.time() - django_settings.SESSION_COOKIE_AGE - 60
    for path in (*folder.iterdir(), folder):
        os.utime(path, (then, then))


def test_uploads_of_refused_forms_are_purged_once_their_session_ended_and_counted(client, student, assignment):
    client.force_login(student)
    abandoned = [kept_folder(client, "data.bin"), kept_folder(client, "more.bin")]
    for folder in abandoned:
        session_ended(folder)
    fresh = kept_folder(client, "today.bin")

    dry = manage_in_process("purge_job_files", "--older-than", "7", "--dry-run")
    assert "would remove: uploads kept for 2 refused submission(s) whose session has ended: 2 file(s), 2.0\xa0MB" in (
        dry.stdout
    )
    assert all(folder.is_dir() for folder in abandoned), "a dry run removes nothing"

    done = manage_in_process("purge_job_files", "--older-than", "7")

    assert done.returncode == 0, done.stderr
    assert "uploads of refused submissions 2 file(s), 2.0\xa0MB" in done.stdout
    assert not any(folder.exists() for folder in abandoned)
    assert (fresh / "today.bin").is_file(), "a session that may still use its files keeps them"


def test_the_worker_purges_them_every_hour_whatever_the_retention_of_job_files(client, student, assignment):
    client.force_login(student)
    folder = kept_folder(client, "data.bin")
    session_ended(folder)

    assert django_settings.CELERY_BEAT_SCHEDULE["kept-uploads-purge"]["schedule"] == 3600.0
    assert not django_settings.LABQUEUE_RETAIN_JOB_FILES_DAYS, "job files kept for good"
    kept_uploads_purge.apply()

    assert not folder.exists()
