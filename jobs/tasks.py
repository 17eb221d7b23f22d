"""Celery tasks: thin wrappers that take ids. All Slurm work happens here, never in a view."""

import logging

from celery import shared_task

from courses.models import Course
from jobs import labs, services, slurm
from jobs.policy_sync import slurm_sync
from jobs.reports.ingest import usage_ingest

log = logging.getLogger(__name__)


def _backoff(retries: int) -> int:
    return min(300, 5 * 2**retries)


@shared_task(bind=True, max_retries=8)
def submit_job(self, job_id: int) -> None:
    try:
        services.job_dispatch(job_id=job_id)
    except slurm.SlurmUnavailable as error:
        raise self.retry(exc=error, countdown=_backoff(self.request.retries))


@shared_task(bind=True, max_retries=8)
def cancel_job(self, job_id: int) -> None:
    try:
        services.job_scancel(job_id=job_id)
    except slurm.SlurmUnavailable as error:
        raise self.retry(exc=error, countdown=_backoff(self.request.retries))


@shared_task
def sync_jobs() -> None:
    try:
        services.jobs_sync()
    except slurm.SlurmUnavailable as error:
        log.warning("Job sync skipped, Slurm did not answer: %s", error)
    services.jobs_requeue_stale()


@shared_task
def ingest_usage() -> None:
    """Copy new Slurm accounting into UsageRecord. When slurmdbd is down the mark stays; the next run catches up."""
    try:
        usage_ingest()
    except slurm.SlurmUnavailable as error:
        log.warning("Usage ingest skipped, slurmdbd did not answer: %s", error)


@shared_task
def sync_slurm(course_id: int | None = None, trigger: str = "periodic") -> None:
    """Write course policies and rosters into Slurm (one course after a change, all of them periodically)."""
    slugs = list(Course.objects.filter(pk=course_id).values_list("slug", flat=True)) if course_id else None
    try:
        slurm_sync(course_slugs=slugs, trigger=trigger)
    except slurm.SlurmUnavailable as error:
        log.warning("Slurm policy sync skipped, sacctmgr did not answer: %s", error)


@shared_task
def labs_tick() -> None:
    """Create the reservations of labs about to start; remove those of labs that ended or were cancelled."""
    try:
        labs.labs_tick()
    except slurm.SlurmUnavailable as error:
        log.warning("Lab reservations not updated, Slurm did not answer: %s", error)
