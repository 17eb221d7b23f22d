"""The job page's live part, polled while the job is not finished: the validator (ETag) of what it shows.

A poll carries the ETag of what the page shows (If-None-Match); when the job's page would not change, the
poll answers 304 Not Modified from the job's row, one query for its newest history entry and one stat of
each log, without reading the logs, walking the job directory or running the explanation catalogue.

What goes into the validator is what the live part shows:
- the job's row (every column but checked_at, which the sync rewrites every cycle: the page shows it only as
  "last checked N minutes ago" and as the out-of-date warning, so those two go in instead);
- who is looking (the owner sees Cancel, course staff a read-only page);
- the newest history entry (a note or a review adds one without changing the row);
- the size and modification time of stdout, stderr and the job directory itself, which change while the job
  runs without the row changing: a job that writes output re-renders its page on the next poll, and a file
  added at the directory's top level does too. A file added deeper down without any output shows on the next
  change of the row or of the logs.

A finished job has no validator: its page stops polling, and what it shows (hints, the retry made of it) may
change without its row changing.
"""

import hashlib
import os
import stat

from django.conf import settings
from django.utils import timezone
from django.utils.timesince import timesince

import portal
from jobs.models import ACTIVE_IN_SLURM, Job, JobEvent
from jobs.sessions import session_shown

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
#: Columns the live part does not show as they are (checked_at: see the module's docstring).
_NOT_SHOWN = frozenset({"checked_at"})


def job_live_etag(*, job: Job, viewer) -> str | None:
    """The quoted ETag of the live part as `viewer` sees it now; None for a finished job."""
    if job.is_terminal:
        return None
    row = [(field.attname, getattr(job, field.attname)) for field in Job._meta.concrete_fields]
    shown = [
        portal.__version__,
        settings.LABQUEUE_LOG_TAIL_BYTES,
        job.user_id == viewer.pk,
        job.title,
        job.assignment.max_attempts,
        [(name, value) for name, value in row if name not in _NOT_SHOWN],
        timesince(job.checked_at) if job.checked_at else None,
        job_out_of_date(job),
        JobEvent.objects.filter(job=job).order_by("-pk").values_list("pk", flat=True).first(),
        _files_stat(job),
        session_shown(job),
    ]
    return '"' + hashlib.blake2b(repr(shown).encode(), digest_size=16).hexdigest() + '"'


def job_out_of_date(job: Job) -> bool:
    """Slurm has not answered about this live job for three sync cycles: the page says the status is the last
    known."""
    if job.status not in ACTIVE_IN_SLURM or job.checked_at is None:
        return False
    return (timezone.now() - job.checked_at).total_seconds() > 3 * settings.LABQUEUE_SYNC_SECONDS


def _files_stat(job: Job) -> tuple:
    """(size, mtime) of the job directory and of its two logs, read with one stat each and no read: the
    directory opened without following a symlink, the logs stat'ed inside it without following one either."""
    if not job.submitted_at or job.files_purged_at is not None:
        return ()
    try:
        fd = os.open(job.workdir, _DIR_FLAGS)
    except PermissionError:
        return ("unreadable",)
    except OSError:
        return ("missing",)
    try:
        found = [_size_and_time(os.fstat(fd))]
        for name in (job.stdout_name, job.stderr_name):
            try:
                found.append(_size_and_time(os.stat(name, dir_fd=fd, follow_symlinks=False)))
            except OSError:
                found.append(None)
    finally:
        os.close(fd)
    return tuple(found)


def _size_and_time(info: os.stat_result) -> tuple[int, int, int]:
    return stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns
