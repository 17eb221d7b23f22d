"""A retry runs with the files the student uploaded for the attempt it retries: the portal copies that attempt's
staged uploads for the new attempt (which the worker then puts in its job directory), so the new attempt's Edit
and resubmit form offers them as its own, and a retry of that retry has them again.

No job reaches Slurm: the attempts are submitted through the page and their failure recorded as the sync would."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from jobs.staging import staging_dir
from tests.conftest import submit_form

NOTES = b"notes of attempt one 7d1e\n"
CONFIG = b"batch_size=32\n"


def failed(job: Job) -> Job:
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_job_id="4242", ended_at=timezone.now())
    job.refresh_from_db()
    return job


def retried(client, job: Job) -> Job:
    response = client.post(reverse("jobs:job-retry", args=[job.uuid]), {"same": "1"})
    new = Job.objects.get(retry_of=job)
    assert response["Location"] == reverse("jobs:job-detail", args=[new.uuid])
    return new


def staged(job: Job) -> dict[str, bytes]:
    """The uploads the portal keeps for the job until the worker copies them into its job directory."""
    folder = staging_dir(str(job.uuid))
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())} if folder.is_dir() else {}


def test_a_retry_and_a_retry_of_that_retry_run_with_the_files_uploaded_for_the_first_attempt(
    client, student, assignment
):
    client.force_login(student)
    uploads = [SimpleUploadedFile("notes.txt", NOTES), SimpleUploadedFile("config.txt", CONFIG)]
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), {**submit_form(), "uploads": uploads})
    assert response.status_code == 302
    first = failed(Job.objects.get())

    second = failed(retried(client, first))
    third = retried(client, second)

    assert staged(second) == staged(third) == {"config.txt": CONFIG, "notes.txt": NOTES}
    assert staged(first) == {"config.txt": CONFIG, "notes.txt": NOTES}, "the attempt retried keeps its own"
    page = client.get(reverse("jobs:job-resubmit", args=[third.uuid])).content.decode()
    assert "kept from attempt 3: config.txt" in page and "kept from attempt 3: notes.txt" in page
