"""Celery tasks of the usage reports: thin wrappers named after the service they call."""

import logging

from celery import shared_task
from django.conf import settings

from reports import ingest
from reports.course_report import course_reports_refresh
from slurm import SlurmUnavailable

log = logging.getLogger(__name__)


@shared_task
def usage_ingest() -> None:
    """Copy new Slurm accounting into UsageRecord, the portal's own cluster's and then each other cluster's. When
    slurmdbd is down the marks stay; the next run catches up. Then the reports of the courses it brought records
    for are computed and kept, so their pages read them (reports.course_report)."""
    accounts: set[str] = set()
    try:
        accounts |= ingest.usage_ingest().accounts
        for cluster in settings.LABQUEUE_SLURM_OTHER_CLUSTERS:
            accounts |= ingest.usage_ingest(other_cluster=cluster).accounts
    except SlurmUnavailable as error:
        log.warning("Usage ingest skipped, slurmdbd did not answer: %s", error)
    course_reports_refresh(accounts=accounts)
