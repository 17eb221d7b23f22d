"""While Slurm does not answer, the submit and cancel tasks retry with a growing countdown; the job waits."""

import pytest
from celery import states
from celery.exceptions import Retry
from celery.signals import task_retry
from django.urls import reverse

import slurm
from jobs.models import Job, JobEvent, Status
from jobs.tasks import job_dispatch, job_scancel
from tests.behaviour_helpers import unreachable_controller
from tests.conftest import job_row, submit_form

pytestmark = pytest.mark.slurm

#: 5 s doubling, at most 5 minutes; 8 retries (jobs.tasks._backoff and max_retries).
COUNTDOWNS = [5, 10, 20, 40, 80, 160, 300, 300]


@pytest.fixture
def retries_seen():
    """(task name, retries so far, Retry) for every retry Celery records."""
    seen: list[tuple[str, int, Retry]] = []

    def record(sender=None, request=None, reason=None, **kwargs) -> None:
        seen.append((sender.name, request.retries, reason))

    task_retry.connect(record, weak=False)
    yield seen
    task_retry.disconnect(record)


@pytest.fixture
def dead_controller(job_root, monkeypatch) -> None:
    """Slurm's tools, as root and as the students, talk to a controller port nobody answers on."""
    monkeypatch.setenv("SLURM_CONF", unreachable_controller(job_root / "dead-controller"))


def test_the_submit_task_retries_with_backoff_and_the_job_stays_queued_saying_why(
    client, student, assignment, retries_seen, dead_controller
):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()

    result = job_dispatch.apply(args=[job.pk])

    assert [name for name, _, _ in retries_seen] == [job_dispatch.name] * len(COUNTDOWNS)
    assert [retries for _, retries, _ in retries_seen] == list(range(len(COUNTDOWNS)))
    assert all(isinstance(reason, Retry) for _, _, reason in retries_seen)
    assert [reason.when for _, _, reason in retries_seen] == COUNTDOWNS
    assert all(isinstance(reason.exc, slurm.SlurmUnavailable) for _, _, reason in retries_seen)
    assert result.state == states.FAILURE and isinstance(result.result, slurm.SlurmUnavailable)

    job.refresh_from_db()
    assert job.status == Status.QUEUED and not job.slurm_job_id
    assert "The cluster is not answering right now" in job.message
    assert JobEvent.objects.filter(job=job, to_status=Status.REJECTED).count() == 0
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "The cluster is not answering right now" in page


def test_the_cancel_task_retries_with_backoff_while_slurm_does_not_answer(
    student, assignment, retries_seen, dead_controller
):
    job = job_row(
        student,
        assignment,
        status=Status.RUNNING,
        slurm_job_id="4242424",
        cancel_requested=True,
    )

    result = job_scancel.apply(args=[job.pk])

    assert [name for name, _, _ in retries_seen] == [job_scancel.name] * len(COUNTDOWNS)
    assert [reason.when for _, _, reason in retries_seen] == COUNTDOWNS
    assert result.state == states.FAILURE and isinstance(result.result, slurm.SlurmUnavailable)
    job.refresh_from_db()
    assert job.status == Status.RUNNING, "a cancel Slurm never heard of changes nothing"
