"""Celery tasks of the cluster-side course policy: thin wrappers named after the service they call.

The lab tick (`jobs.tasks.labs_tick`) is in jobs: after clusterpolicy.labs.labs_tick it moves portal
jobs off removed reservations, and clusterpolicy does not import jobs.
"""

import logging

from celery import shared_task

from clusterpolicy import associations
from courses.models import Course
from slurm import SlurmUnavailable

log = logging.getLogger(__name__)


@shared_task
def associations_reconcile(course_id: int | None = None, trigger: str = "periodic") -> None:
    """Write course policies and rosters into Slurm (one course after a change, all of them periodically)."""
    slugs = list(Course.objects.filter(pk=course_id).values_list("slug", flat=True)) if course_id else None
    try:
        associations.associations_reconcile(course_slugs=slugs, trigger=trigger)
    except SlurmUnavailable as error:
        log.warning("Association reconciliation skipped, sacctmgr did not answer: %s", error)
