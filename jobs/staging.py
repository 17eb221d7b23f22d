"""A job's staged uploads: the files a student sent with a submission, kept by the portal in
MEDIA_ROOT/uploads/<job uuid>/ until the worker copies them into the job directory. The portal's own files
(the service account's), not the student's. Both sides: the web side stages and cancels (jobs.services),
the worker copies them (jobs.dispatch), the purge counts and removes them (jobs.retention).
"""

import os
import shutil
from pathlib import Path

from django.conf import settings


def staging_dir(job_uuid: str) -> Path:
    """Where the web process keeps a job's uploads until the worker copies them."""
    return Path(settings.MEDIA_ROOT) / "uploads" / job_uuid


def staging_clear(job_uuid: str) -> None:
    shutil.rmtree(staging_dir(job_uuid), ignore_errors=True)


def staging_size(job_uuid: str) -> tuple[int, int]:
    """Files and bytes of a job's staged uploads (the portal's own files)."""
    folder = staging_dir(job_uuid)
    if not folder.is_dir():
        return 0, 0
    with os.scandir(folder) as entries:
        sizes = [entry.stat(follow_symlinks=False).st_size for entry in entries if entry.is_file(follow_symlinks=False)]
    return len(sizes), sum(sizes)


def staging_remove(job_uuid: str) -> None:
    """Delete a job's staged uploads (gone already is fine); raises OSError when they cannot be deleted."""
    try:
        shutil.rmtree(staging_dir(job_uuid))  # does not follow symlinks
    except FileNotFoundError:
        pass
