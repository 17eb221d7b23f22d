"""Two Cancel requests for one queued job that both read it before either acted (a double click): the first
cancels it, the second finds it cancelled and records nothing more, neither a second cancellation nor a
cancel request on a job that has ended."""

import pytest

from jobs.models import Job, JobEvent, Status
from jobs.services import job_cancel
from tests.conftest import submitted

pytestmark = pytest.mark.django_db


def cancel_twice_at_once(client, student) -> Job:
    job = submitted(client, student)  # queued: no worker has taken it
    first, second = Job.objects.get(pk=job.pk), Job.objects.get(pk=job.pk)  # both requests' reads
    job_cancel(job=first, actor=student)
    job_cancel(job=second, actor=student)
    return Job.objects.get(pk=job.pk)


def test_a_queued_job_cancelled_twice_at_once_is_cancelled_once_and_asked_nothing_more(client, student, assignment):
    job = cancel_twice_at_once(client, student)

    assert job.status == Status.CANCELLED and job.ended_at is not None and not job.cancel_requested
    causes = list(JobEvent.objects.filter(job=job).values_list("cause", flat=True))
    assert causes == ["Submitted in the portal.", "Cancelled before it reached the cluster."]
