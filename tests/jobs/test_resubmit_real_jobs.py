"""Edit and resubmit with jobs that really run on the lab cluster: the new attempt runs the changed parameter
with the files of the earlier one, and an attempt still running keeps running beside its resubmission."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job, Status
from jobs.tasks import job_dispatch
from tests.behaviour_helpers import slurm_cleanup
from tests.conftest import PARAMETERS, submit_form, wait_for_status

pytestmark = pytest.mark.slurm

NOTES = b"notes kept from the first attempt 9d41\n"
#: Fails for the batch size a failure explanation would call too big; waits a while for "long".
SCRIPT = """\
cat notes.txt
echo "name=$NAME"
if [ "$NAME" = "long" ]; then sleep 120; fi
test "$NAME" != "bs64"
"""


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


@pytest.fixture
def assignment(course) -> Assignment:
    return Assignment.objects.create(
        course=course, slug="batch", title="Batch sizes", script_template=SCRIPT, parameters=PARAMETERS, gpus=0
    )


def send(job: Job) -> Job:
    """What the worker does with the submit task the commit enqueued."""
    job_dispatch(job.pk)
    job.refresh_from_db()
    return job


def first_attempt(client, student, name: str) -> Job:
    client.force_login(student)
    form = {**submit_form(gpus="0", param_NAME=name), "uploads": [SimpleUploadedFile("notes.txt", NOTES)]}
    assert client.post(reverse("jobs:job-create", args=["cs101", "batch"]), form).status_code == 302
    return send(Job.objects.get())


def resubmit(client, job: Job, name: str):
    form = submit_form(gpus="0", param_NAME=name, keep=["notes.txt"], submission_key="d" * 32)
    return client.post(reverse("jobs:job-resubmit", args=[job.uuid]), form)


def test_a_job_that_really_failed_is_resubmitted_with_a_changed_parameter_and_its_files(client, student, assignment):
    failed = wait_for_status(first_attempt(client, student, "bs64"), Status.FAILED, Status.COMPLETED)
    assert failed.status == Status.FAILED and failed.exit_code == 1

    response = resubmit(client, failed, "bs16")
    new = Job.objects.get(resubmit_of=failed)
    assert response.status_code == 302 and response["Location"] == reverse("jobs:job-detail", args=[new.uuid])
    new = wait_for_status(send(new), Status.FAILED, Status.COMPLETED)

    assert new.status == Status.COMPLETED, new.message
    assert new.slurm_job_id != failed.slurm_job_id and new.workdir != failed.workdir
    page = client.get(reverse("jobs:job-detail", args=[new.uuid])).content.decode()
    assert "name=bs16" in page and NOTES.decode().strip() in page


def test_a_running_attempt_keeps_running_while_its_resubmission_runs(client, student, assignment):
    running = wait_for_status(first_attempt(client, student, "long"), Status.RUNNING)

    assert resubmit(client, running, "short").status_code == 302
    new = wait_for_status(send(Job.objects.get(resubmit_of=running)), Status.COMPLETED, Status.FAILED)

    assert new.status == Status.COMPLETED, new.message
    running.refresh_from_db()
    assert running.status == Status.RUNNING and not running.cancel_requested
    page = client.get(reverse("jobs:job-detail", args=[new.uuid])).content.decode()
    assert "name=short" in page and NOTES.decode().strip() in page
