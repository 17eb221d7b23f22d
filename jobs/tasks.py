"""Celery tasks: thin wrappers that take ids, each named after the service it calls.

All Slurm work happens here, never in a view. jobs.services and jobs.dispatch send these tasks by
name (jobs.enqueue) and never import this module; it is the only one that imports jobs.dispatch.
"""

import logging
import time

from celery import shared_task
from django.conf import settings

from clusterpolicy import labs
from jobs import checks, dispatch, notifications, retention, sessions
from jobs.workdir import WorkdirUnavailable
from slurm import SlurmUnavailable

log = logging.getLogger(__name__)


def _backoff(retries: int) -> int:
    return min(300, 5 * 2**retries)


@shared_task(bind=True, max_retries=8)
def job_dispatch(self, job_id: int) -> None:
    try:
        dispatch.job_dispatch(job_id=job_id)
    except (SlurmUnavailable, WorkdirUnavailable) as error:
        raise self.retry(exc=error, countdown=_backoff(self.request.retries))


@shared_task(bind=True, max_retries=8)
def job_scancel(self, job_id: int) -> None:
    try:
        dispatch.job_scancel(job_id=job_id)
    except SlurmUnavailable as error:
        raise self.retry(exc=error, countdown=_backoff(self.request.retries))


@shared_task(bind=True, max_retries=8)
def check_submit(self, check_id: int) -> None:
    """Send an assignment's check of a completed job to Slurm (jobs.checks)."""
    try:
        checks.check_submit(check_id=check_id)
    except (SlurmUnavailable, WorkdirUnavailable) as error:
        raise self.retry(exc=error, countdown=_backoff(self.request.retries))


@shared_task
def jobs_sync() -> None:
    """The job-status sync (every LABQUEUE_SYNC_SECONDS), then re-send jobs whose submit task was lost."""
    try:
        dispatch.jobs_sync()
    except SlurmUnavailable as error:
        log.warning("Job sync skipped, Slurm did not answer: %s", error)
    else:
        dispatch.heartbeat("jobs_sync")
    dispatch.jobs_requeue_stale()
    checks.checks_requeue_stale()


@shared_task
def sessions_follow() -> None:
    """Interactive sessions: where new notebook servers listen, and idle ones stopped (jobs.sessions)."""
    sessions.sessions_follow()


@shared_task(bind=True, max_retries=8)
def job_notify(self, job_id: int) -> None:
    """Mail the student about how their job ended (jobs.notifications); retried while the mail server fails."""
    try:
        notifications.job_notify(job_id=job_id)
    except OSError as error:  # the mail server is down or refused it for now (smtplib's errors are OSErrors)
        raise self.retry(exc=error, countdown=_backoff(self.request.retries))


@shared_task
def job_notify_resend() -> None:
    """Send again the job_notify tasks the broker did not take (jobs.notifications)."""
    notifications.job_notify_resend()


@shared_task
def failure_digests_send() -> None:
    """TAs' and instructors' daily mail of their courses' new failures (the failure-digests-send beat entry)."""
    notifications.failure_digests_send()


@shared_task
def labs_tick() -> None:
    """Create the reservations of labs about to start; remove those of labs that ended or were cancelled;
    then move portal jobs still waiting for a removed reservation to the normal queue.

    In jobs rather than clusterpolicy because it updates Job rows (clusterpolicy does not import jobs).
    """
    try:
        labs.labs_tick()
        if dispatch.jobs_leave_ended_labs():
            labs.labs_release_ended()  # the reservations those jobs were waiting for
        dispatch.jobs_release_lab_holds()
    except SlurmUnavailable as error:
        log.warning("Lab reservations not updated, Slurm did not answer: %s", error)


#: How long one run of the periodic purge goes on (well inside the task's time limit); a backlog is worked
#: off hour by hour, and a job whose files cannot be removed costs one helper call, never the whole run.
PURGE_SECONDS = 120


@shared_task
def kept_uploads_purge() -> None:
    """The uploads kept for refused forms whose session has ended (nobody can use them): every hour."""
    removed = retention.kept_uploads_purge()
    if removed.folders:
        log.info(
            "Kept uploads purge: %d file(s), %d bytes of %d refused submission(s) whose session ended removed",
            removed.files,
            removed.bytes,
            removed.folders,
        )


@shared_task
def job_files_purge() -> None:
    """The retention policy (LABQUEUE_RETAIN_JOB_FILES_DAYS): what `manage.py purge_job_files` does."""
    days = settings.LABQUEUE_RETAIN_JOB_FILES_DAYS
    if not days:
        return
    deadline = time.monotonic() + PURGE_SECONDS
    removed = failed = 0
    for removal in retention.job_files_purge(older_than_days=days):
        if removal.error:
            failed += 1
        else:
            removed += 1
        if time.monotonic() > deadline:
            break
    log.info("Job files purge: files of %d job(s) removed, %d could not be (see the warnings)", removed, failed)
