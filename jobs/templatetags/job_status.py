"""Template filters for a job's status label, the same words on every page (jobs.explanations.status_label),
what a waiting job waits for and when Slurm expects it to start, and memory in words."""

from django import template
from django.utils import timezone
from django.utils.formats import date_format

from jobs.efficiency import memory_text
from jobs.explanations import explain, status_label
from jobs.models import Job, Status

register = template.Library()


@register.filter
def status_words(job: Job) -> str:
    """What the job's label says: its status, or "Finished, waiting for the cluster's accounting"."""
    return status_label(job)[1]


@register.filter
def status_key(job: Job) -> str:
    """The label's CSS key (status-<key>)."""
    return status_label(job)[0]


@register.filter
def waiting_for(job: Job) -> str:
    """What a waiting job waits for, in plain words (its explanation's title, from squeue's reason alone)."""
    if job.status != Status.PENDING or job.left_queue_at:
        return ""
    explanation = explain(job, [])
    return explanation.title if explanation else ""


@register.filter
def expected_start(job: Job) -> str:
    """ "Expected to start by 14:05" (the portal's time zone; with the day when not today) while the job waits;
    "" when Slurm gives no expected start."""
    if job.status != Status.PENDING or job.left_queue_at or job.expected_start_at is None:
        return ""
    if job.expected_start_at < timezone.now():
        return ""  # an estimate gone by says nothing; the next sync brings Slurm's new one
    when = timezone.localtime(job.expected_start_at)
    if when.date() == timezone.localdate():
        return f"Expected to start by {when:%H:%M}"
    return f"Expected to start by {date_format(when, 'D j M')}, {when:%H:%M}"


@register.filter
def memory(mb: int | None) -> str:
    """``1229`` -> "1.2 GB"."""
    return "" if mb is None else memory_text(mb)
