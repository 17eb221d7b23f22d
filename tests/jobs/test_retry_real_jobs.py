"""Retrying jobs that really ran on the cluster: the files come along; completed jobs are not retried."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job, Status
from jobs.tasks import job_dispatch
from tests.behaviour_helpers import slurm_cleanup
from tests.conftest import submit_form, wait_for_status

pytestmark = pytest.mark.slurm

NOTES = b"notes from the first attempt 7f3a\n"


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


def send(job: Job) -> Job:
    """What the worker does with the submit task the commit enqueued."""
    job_dispatch(job.pk)
    job.refresh_from_db()
    return job


def retry(client, job: Job, **kwargs):
    return client.post(reverse("jobs:job-retry", args=[job.uuid]), {"same": "1"}, **kwargs)


@pytest.fixture
def failed_job(client, student, course) -> Job:
    """A job that printed its uploaded file and then really failed on the cluster (exit 3)."""
    Assignment.objects.create(
        course=course, slug="reads", title="Reads notes", script_template="cat notes.txt\nexit 3\n", gpus=0
    )
    client.force_login(student)
    upload = SimpleUploadedFile("notes.txt", NOTES)
    client.post(reverse("jobs:job-create", args=["cs101", "reads"]), {**submit_form(gpus="0"), "uploads": [upload]})
    job = wait_for_status(send(Job.objects.get()), Status.FAILED, Status.COMPLETED)
    assert job.status == Status.FAILED and job.exit_code == 3
    return job


def test_a_retry_of_a_job_that_really_failed_gets_the_files_uploaded_for_it(client, failed_job):
    assert NOTES.decode().strip() in client.get(reverse("jobs:job-detail", args=[failed_job.uuid])).content.decode()

    response = retry(client, failed_job)
    new = Job.objects.get(retry_of=failed_job)
    assert response.status_code == 302 and response["Location"] == reverse("jobs:job-detail", args=[new.uuid])
    new = wait_for_status(send(new), Status.FAILED, Status.COMPLETED)

    assert new.slurm_job_id != failed_job.slurm_job_id and new.workdir != failed_job.workdir
    page = client.get(reverse("jobs:job-detail", args=[new.uuid])).content.decode()
    assert NOTES.decode().strip() in page
    assert "No such file" not in page


def test_pressing_retry_twice_on_a_job_that_really_failed_makes_one_attempt(
    client, failed_job, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as enqueued:
        first = retry(client, failed_job)
        second = retry(client, failed_job)
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"]
    assert Job.objects.filter(retry_of=failed_job).count() == 1
    assert Job.objects.count() == 2
    assert len(enqueued) == 1, "one submit task for the one new attempt"


def test_a_job_that_really_completed_cannot_be_retried_and_the_page_says_why(client, student, assignment):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = wait_for_status(send(Job.objects.get()), Status.COMPLETED)

    response = retry(client, job)
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:job-detail", args=[job.uuid])
    page = retry(client, job, follow=True)
    assert page.status_code == 200
    assert "Only a failed, cancelled or refused job can be retried." in page.content.decode()
    assert Job.objects.count() == 1 and not Job.objects.filter(retry_of=job).exists()
