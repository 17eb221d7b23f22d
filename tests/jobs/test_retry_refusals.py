"""What the Retry button refuses and what pressing it again gives, through the job page: a job still running is
refused with the reason, a second press on the last allowed attempt opens the attempt the first press made (not
the cap's refusal), and an attempt recorded before assignment versions existed is retried with its data set.

No job reaches Slurm: the jobs are submitted through the page and their end is recorded as the sync would."""

from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from tests.conftest import submit_form


def submitted(client, user, **overrides) -> Job:
    client.force_login(user)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(**overrides))
    assert response.status_code == 302
    return Job.objects.filter(user=user).latest("pk")


def recorded(job: Job, status: str, **fields) -> Job:
    """The job as the sync records it in `status` (Slurm's id, its times)."""
    now = timezone.now()
    values = {"slurm_job_id": "4242", "submitted_at": now, "ended_at": None if status == Status.RUNNING else now}
    Job.objects.filter(pk=job.pk).update(status=status, **{**values, **fields})
    job.refresh_from_db()
    return job


def retry_same(client, job: Job):
    return client.post(reverse("jobs:job-retry", args=[job.uuid]), {"same": "1"})


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_retrying_a_running_job_is_refused_with_the_reason(client, student, assignment):
    job = recorded(submitted(client, student), Status.RUNNING)

    response = retry_same(client, job)

    assert response["Location"] == reverse("jobs:job-detail", args=[job.uuid])
    assert said(response)[-1] == "Only a failed, cancelled or refused job can be retried."
    assert not Job.objects.filter(retry_of=job).exists()


def test_pressing_retry_again_on_the_last_allowed_attempt_opens_that_attempt_not_a_refusal(client, student, assignment):
    assignment.max_attempts = 2
    assignment.save()
    job = recorded(submitted(client, student), Status.FAILED)

    first = retry_same(client, job)
    again = retry_same(client, job)

    new = Job.objects.get(retry_of=job)
    assert first["Location"] == again["Location"] == reverse("jobs:job-detail", args=[new.uuid])
    assert said(again)[-1] == "Attempt 2 submitted."
    assert Job.objects.count() == 2


def test_an_attempt_recorded_before_assignment_versions_is_retried_with_its_data_set(
    client, student, assignment, dataset
):
    assignment.datasets.add(dataset)
    job = recorded(submitted(client, student, dataset=str(dataset.pk)), Status.FAILED, assignment_version=None)

    response = retry_same(client, job)

    new = Job.objects.get(retry_of=job)
    assert response["Location"] == reverse("jobs:job-detail", args=[new.uuid])
    assert new.dataset == dataset and new.assignment_version is None
    assert dataset.path in new.script
