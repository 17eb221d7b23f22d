"""Template filters for a job's status label, the same words on every page (jobs.explanations.status_label)."""

from django import template

from jobs.explanations import status_label
from jobs.models import Job

register = template.Library()


@register.filter
def status_words(job: Job) -> str:
    """What the job's label says: its status, or "Finished, waiting for the cluster's accounting"."""
    return status_label(job)[1]


@register.filter
def status_key(job: Job) -> str:
    """The label's CSS key (status-<key>)."""
    return status_label(job)[0]
