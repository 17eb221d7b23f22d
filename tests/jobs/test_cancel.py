"""Cancelling a job before and after it reaches Slurm."""

import pytest
from django.urls import reverse

from courses.models import Assignment
from jobs.dispatch import job_dispatch, job_scancel
from jobs.models import Job, Status
from tests.conftest import dispatch, job_row, submit_form, wait_for_status


def test_a_job_cancelled_before_it_reaches_the_cluster_stops_at_once(client, student, assignment):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    response = client.post(reverse("jobs:job-cancel", args=[job.uuid]))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == Status.CANCELLED
    job_dispatch(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Status.CANCELLED and not job.slurm_job_id


@pytest.mark.parametrize(
    ("status", "cancel_requested", "offered"),
    [(Status.RUNNING, False, True), (Status.RUNNING, True, False), (Status.COMPLETED, False, False)],
)
def test_the_cancel_button_is_offered_only_on_a_job_not_ended_and_not_already_being_cancelled(
    client, student, assignment, status, cancel_requested, offered
):
    job = job_row(student, assignment, status=status, cancel_requested=cancel_requested)
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert ('id="cancel-job"' in page) == offered


@pytest.mark.slurm
def test_a_running_job_is_cancelled_through_slurm(client, student, course):
    Assignment.objects.create(course=course, slug="long", title="Long", script_template="sleep 300\n", gpus=0)
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "long"]), submit_form(gpus="0"))
    job = wait_for_status(dispatch(Job.objects.get()), Status.RUNNING)

    client.post(reverse("jobs:job-cancel", args=[job.uuid]))
    job.refresh_from_db()
    assert job.cancel_requested and job.status == Status.RUNNING
    job_scancel(job_id=job.pk)  # what the Celery cancel task does
    job = wait_for_status(job, Status.CANCELLED)
    assert job.slurm_state == "CANCELLED"
    page = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert b"The job was cancelled." in page.content
    assert b"Cancel job" not in page.content

    again = client.post(reverse("jobs:job-cancel", args=[job.uuid]), follow=True)
    assert b"already finished" in again.content
