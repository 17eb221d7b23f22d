"""Cancelling a job before it reaches the cluster removes the files uploaded with it from the portal's
staging area, where they would otherwise stay for good (no worker will copy them any more).

No cluster: the job is cancelled while still queued.
"""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs.models import Job, Status
from jobs.staging import staging_dir
from tests.conftest import submit_form


def test_cancelling_a_queued_job_removes_its_staged_uploads(client, student, assignment):
    client.force_login(student)
    uploads = [SimpleUploadedFile("notes.txt", b"my notes\n"), SimpleUploadedFile("data.csv", b"a,b\n1,2\n")]
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), {**submit_form(), "uploads": uploads})
    job = Job.objects.get()
    staged = staging_dir(str(job.uuid))
    assert sorted(path.name for path in staged.iterdir()) == ["data.csv", "notes.txt"]

    response = client.post(reverse("jobs:job-cancel", args=[job.uuid]))

    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == Status.CANCELLED
    assert not staged.exists()
