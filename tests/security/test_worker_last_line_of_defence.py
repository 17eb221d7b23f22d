"""The worker checks again, just before anything runs as the student, what the web side checked when the
job was saved: a job that waited in the queue while its student was dropped is not sent."""

import pytest
from django.urls import reverse

from jobs.dispatch import job_dispatch
from jobs.models import Job, Status
from slurm.runner import command_log
from tests.conftest import submit_form

pytestmark = pytest.mark.slurm


def test_a_job_queued_before_its_student_was_dropped_is_refused_at_dispatch_without_running_anything(
    client, course, student, assignment
):
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get()
    course.enrollments.filter(user=student).delete()  # the roster drop, while the job waited in the queue

    with command_log() as commands:
        job_dispatch(job_id=job.pk)

    assert commands == [], "no helper, no sbatch: nothing ran as the student"
    job.refresh_from_db()
    assert job.status == Status.REJECTED and not job.slurm_job_id
    assert job.message == (
        "You are no longer enrolled in CS101 (Fall), so this job was not sent. If this is a mistake, ask the "
        "course's instructor to add you to the roster again, then press Retry."
    ), "what happened, why, and what to do next (the Retry button's own name)"


@pytest.mark.parametrize("netid", ["root", "daemon", "nobody"])
def test_a_job_saved_to_run_as_root_or_a_system_account_is_refused_at_dispatch(client, student, assignment, netid):
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get()
    # However the row came to name it (an old row, a tampered database, an admin slip): the worker refuses.
    Job.objects.filter(pk=job.pk).update(run_as=netid)

    with command_log() as commands:
        job_dispatch(job_id=job.pk)

    assert commands == [], "nothing ran as the account"
    job.refresh_from_db()
    assert job.status == Status.REJECTED
    assert "the portal never runs anything as it" in job.message
