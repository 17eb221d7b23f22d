"""Removing the files of finished jobs: the retention policy (docs/records.md).

A finished job's directory (<job root>/<netid>/<job uuid>/: the script, the logs, whatever the job wrote)
and its staged uploads (MEDIA_ROOT/uploads/<job uuid>/) are removed; the Job row, its history and the
usage records stay, so the job page, the course reports and their reconciliation with Slurm are unchanged.
The job directory belongs to the student, so it is removed as the student through the job-directory helper
(jobs.workdir.workdir_remove); the staged uploads are the portal's own. So are the uploads kept across a
refused form (MEDIA_ROOT/pending/<token>/, jobs.uploads): they are removed once the session that kept them
has ended, since nobody can use them after that.

Worker or operator side only (`manage.py purge_job_files`, `forget_person`, the `job_files_purge` task):
never from a web request.
"""

import logging
import os
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from jobs import files
from jobs.models import TERMINAL, Job, JobEvent
from jobs.staging import staging_remove, staging_size
from jobs.uploads import kept_root
from jobs.workdir import Removed, WorkdirError, WorkdirUnavailable, workdir_remove

log = logging.getLogger(__name__)

#: Directory entries counted for a dry run's estimate of one job directory.
ESTIMATE_MAX_ENTRIES = files.MAX_SCANNED_ENTRIES


@dataclass(frozen=True)
class FilesRemoval:
    """What was (or, in a dry run, would be) removed for one job; `error` when it could not be."""

    job: Job
    files: int = 0
    bytes: int = 0
    uploads: int = 0
    upload_bytes: int = 0
    unreadable: bool = False
    error: str = ""


def jobs_with_files_older_than(*, days: int, now: datetime | None = None) -> QuerySet[Job]:
    """Finished jobs whose files are still there and which ended more than `days` days ago (a job that
    never reached the cluster counts from its last change)."""
    cutoff = (now or timezone.now()) - timedelta(days=days)
    return (
        Job.objects.filter(status__in=TERMINAL, files_purged_at__isnull=True)
        .annotate(finished_at=Coalesce("ended_at", "updated_at"))
        .filter(finished_at__lt=cutoff)
        .select_related("assignment__course")
        .order_by("finished_at", "pk")
    )


def job_files_remove(*, job: Job, cause: str, dry_run: bool = False) -> FilesRemoval:
    """Remove one finished job's directory (as the student) and staged uploads, then record it on the job
    with a JobEvent giving `cause`. A dry run only counts what is there."""
    uploads, upload_bytes = staging_size(str(job.uuid))
    if dry_run:
        count, size, unreadable = _estimate(job.workdir)
        return FilesRemoval(job, count, size, uploads, upload_bytes, unreadable=unreadable)
    if not job.is_terminal:
        return FilesRemoval(job, error="the job has not finished; its files are in use")
    try:
        removed = Removed() if _gone(job.workdir) else workdir_remove(workdir=job.workdir, netid=job.run_as)
    except (WorkdirError, WorkdirUnavailable) as error:
        log.warning("Files of job %s not removed: %s", job.uuid, error)
        return FilesRemoval(job, error=str(error))
    try:
        staging_remove(str(job.uuid))
    except OSError as error:
        log.warning("Staged uploads of job %s not removed: %s", job.uuid, error)
        return FilesRemoval(job, error=f"its job directory was removed but not its staged uploads ({error})")
    with transaction.atomic():
        now = timezone.now()
        if Job.objects.filter(pk=job.pk, files_purged_at__isnull=True).update(files_purged_at=now):
            JobEvent.objects.create(job=job, cause=cause)
    job.files_purged_at = now
    return FilesRemoval(job, removed.files, removed.bytes, uploads, upload_bytes)


def job_files_purge(
    *, older_than_days: int, dry_run: bool = False, now: datetime | None = None
) -> Iterator[FilesRemoval]:
    """The retention policy: remove the files of finished jobs that ended more than `older_than_days` days
    ago, oldest first, yielding each job's removal as it happens (stop iterating to stop)."""
    if older_than_days < 0:
        raise ValueError("The number of days cannot be negative.")
    cause = (
        "The job's files (its output, logs and uploads) were removed under the retention policy: files of "
        f"finished jobs are kept for {older_than_days} day(s). The job's record and its usage stay."
    )
    jobs = jobs_with_files_older_than(days=older_than_days, now=now)
    for job in jobs.iterator():
        yield job_files_remove(job=job, cause=cause, dry_run=dry_run)


@dataclass(frozen=True)
class KeptUploadsRemoval:
    """The uploads of refused forms whose session has ended: what was (or would be) removed."""

    folders: int = 0
    files: int = 0
    bytes: int = 0


def kept_uploads_purge(*, dry_run: bool = False, now: float | None = None) -> KeptUploadsRemoval:
    """Remove the uploads kept across a refused form (jobs.uploads) that no session can use any more: nothing
    in their folder changed for longer than a session lasts (SESSION_COOKIE_AGE)."""
    cutoff = (time.time() if now is None else now) - settings.SESSION_COOKIE_AGE
    folders = count = size = 0
    with os.scandir(kept_root()) if kept_root().is_dir() else nullcontext([]) as entries:
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            newest, files_in, bytes_in = _folder_figures(entry.path)
            if newest >= cutoff:
                continue
            if not dry_run:
                shutil.rmtree(entry.path, ignore_errors=True)
            folders, count, size = folders + 1, count + files_in, size + bytes_in
    return KeptUploadsRemoval(folders, count, size)


def _folder_figures(path: str) -> tuple[float, int, int]:
    """The newest change in a kept-uploads folder (the folder or a file in it), its files and their bytes."""
    newest = os.lstat(path).st_mtime
    count = size = 0
    with os.scandir(path) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            newest = max(newest, info.st_mtime)
            count += 1
            size += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return newest, count, size


def _estimate(workdir: str) -> tuple[int, int, bool]:
    """Files and bytes under a job directory as the portal's group sees it (symlinks counted as files, never
    followed; at most ESTIMATE_MAX_ENTRIES entries looked at), and whether the portal cannot read it."""
    if files.unreadable(workdir):
        return 0, 0, True
    count = size = seen = 0
    for top, directories, names in os.walk(workdir, onerror=lambda error: None):  # symlinked directories: not entered
        for name in names:
            seen += 1
            if seen > ESTIMATE_MAX_ENTRIES:
                return count, size, False
            try:
                info = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            count += 1
            size += info.st_size if stat.S_ISREG(info.st_mode) else 0
        seen += len(directories)
    return count, size, False


def _gone(workdir: str) -> bool:
    """The job directory is not there (never made, or removed by hand): nothing to ask the student's helper
    for, which also lets the files of someone whose cluster account was already deleted be recorded as gone."""
    try:
        os.lstat(workdir)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # the portal may not look: the helper, as the student, finds out
    return False
