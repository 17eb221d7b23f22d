"""Cancel racing another request or the worker, for a job still queued in the portal. Each request acts on the
job as it read it; only the status's compare-and-set decides which one moved it:
- a double click: the first request cancels the job, the second finds it cancelled and records nothing more
  (neither a second cancellation nor a cancel request on a job that has ended);
- Cancel pressed as the worker takes the job to send it: the cancel is asked of the worker, which stops the
  job once Slurm has it, instead of being lost."""

import pytest

from jobs.lifecycle import job_transition
from jobs.models import Job, JobEvent, Status
from jobs.services import job_cancel
from tests.conftest import submitted

pytestmark = pytest.mark.django_db

SUBMITTED = "Submitted in the portal."
CANCELLED = "Cancelled before it reached the cluster."


def causes(job: Job) -> list[str]:
    return list(JobEvent.objects.filter(job=job).values_list("cause", flat=True))


def double_click_cancels_once(client, student) -> Job:
    job = submitted(client, student)  # queued: no worker has taken it
    first, second = Job.objects.get(pk=job.pk), Job.objects.get(pk=job.pk)  # both requests' reads

    job_cancel(job=first, actor=student)
    job.refresh_from_db()
    assert job.status == Status.CANCELLED and job.ended_at is not None and not job.cancel_requested
    assert causes(job) == [SUBMITTED, CANCELLED]
    cancelled = job.updated_at
    assert cancelled >= job.ended_at, "the change's time is recorded"

    job_cancel(job=second, actor=student)
    job.refresh_from_db()
    assert job.status == Status.CANCELLED and not job.cancel_requested and job.updated_at == cancelled
    assert causes(job) == [SUBMITTED, CANCELLED]
    return job


def cancel_as_the_worker_takes_the_job_is_asked_of_the_worker(client, student) -> Job:
    job = submitted(client, student)
    read_by_the_request = Job.objects.get(pk=job.pk)
    # The worker's submit task claims the job first, as job_dispatch does before calling Slurm.
    assert job_transition(job=Job.objects.get(pk=job.pk), to=Status.SUBMITTING, cause="Sending to the cluster.")

    job_cancel(job=read_by_the_request, actor=student)

    job.refresh_from_db()
    assert job.status == Status.SUBMITTING and job.cancel_requested
    assert causes(job) == [SUBMITTED, "Sending to the cluster.", "Cancel requested."]
    return job


def test_a_queued_job_cancelled_twice_at_once_is_cancelled_once_and_asked_nothing_more(client, student, assignment):
    double_click_cancels_once(client, student)


def test_cancel_pressed_as_the_worker_takes_the_job_is_asked_of_the_worker(client, student, assignment):
    cancel_as_the_worker_takes_the_job_is_asked_of_the_worker(client, student)
