"""Celery tasks of the usage reports: thin wrappers named after the service they call."""

import logging

from celery import shared_task

from reports import ingest
from slurm import SlurmUnavailable

log = logging.getLogger(__name__)


@shared_task
def usage_ingest() -> None:
    """Copy new Slurm accounting into UsageRecord. When slurmdbd is down the mark stays; the next run catches up."""
    try:
        ingest.usage_ingest()
    except SlurmUnavailable as error:
        log.warning("Usage ingest skipped, slurmdbd did not answer: %s", error)
