"""A job Slurm refuses is marked refused, with Slurm's own reason shown to the student and in the worker's log; the
log names the Slurm job a job Slurm accepts became."""

import logging

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from tests.behaviour_helpers import slurm_cleanup
from tests.conftest import dispatch, submit_form

pytestmark = pytest.mark.slurm


def submitted_and_sent(client, student) -> Job:
    """The student submits through the job form; the worker's submit task then sends the job."""
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    return dispatch(Job.objects.get())


def test_an_account_slurm_does_not_know_is_shown_as_refused_with_slurms_reason(
    client, student, course, assignment, caplog
):
    course.slurm_account = "nosuchacct"
    course.save()
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    with caplog.at_level(logging.INFO, logger="jobs.dispatch"):
        job = dispatch(Job.objects.get())
    assert job.status == Status.REJECTED
    assert "Invalid account" in job.message
    [logged] = [record.getMessage() for record in caplog.records if record.name == "jobs.dispatch"]
    assert logged == f"Job not sent: {job.message}", "the operators' log says why, in Slurm's words"
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Refused by the cluster" in page
    assert "Invalid account" in page
    assert "hx-trigger" not in page


def test_a_partition_the_cluster_does_not_have_is_sent_as_given_and_refused_with_slurms_reason(
    client, student, course, assignment
):
    # sbatch is never left to fall back on the cluster's default partition.
    course.partition = "nosuchpartition"
    course.save()
    job = submitted_and_sent(client, student)
    assert job.status == Status.REJECTED
    assert "invalid partition" in job.message.lower()
    assert "invalid partition" in client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode().lower()


def test_a_student_with_no_cluster_account_gets_a_clear_refusal(client, student, assignment):
    student.netid = "nosuchuser"
    student.save()
    job = submitted_and_sent(client, student)
    assert job.status == Status.REJECTED
    assert "no account named 'nosuchuser'" in job.message


def test_a_job_slurm_accepts_is_logged_with_its_slurm_job_id(client, student, assignment, caplog):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    with caplog.at_level(logging.INFO, logger="jobs.dispatch"), slurm_cleanup():
        job = dispatch(Job.objects.get())
        assert (job.status, job.slurm_state) == (Status.PENDING, "PENDING") and job.slurm_job_id
    logged = [record.getMessage() for record in caplog.records if record.name == "jobs.dispatch"]
    assert logged == [f"Job accepted by Slurm as job {job.slurm_job_id}"]
