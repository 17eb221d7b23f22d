"""The worker's scancel runs as the job's owner, so Slurm's record (and the job page) says the student
cancelled the job, not the portal's service account."""

import logging
import pwd

import pytest
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job, Status
from jobs.tasks import job_scancel
from portal.logs import ContextFilter
from tests.conftest import dispatch, submit_form, wait_for_status

pytestmark = pytest.mark.slurm


def test_a_job_cancelled_through_the_worker_is_recorded_as_cancelled_by_the_student(client, student, course):
    Assignment.objects.create(course=course, slug="long", title="Long", script_template="sleep 300\n", gpus=0)
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "long"]), submit_form(gpus="0"))
    job = dispatch(Job.objects.get())
    assert job.slurm_job_id

    assert client.post(reverse("jobs:job-cancel", args=[job.uuid])).status_code == 302
    job_scancel(job.pk)  # the cancel task the commit enqueues
    job = wait_for_status(job, Status.CANCELLED)

    uid = str(pwd.getpwnam("student1").pw_uid)
    assert job.cancelled_by == uid
    assert job.reason == "", "Slurm's reason of an ended job is 'None', which is no reason to show"
    assert f"(by {uid})" in client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()


def test_the_workers_scancel_is_logged_with_the_job_it_cancels(client, student, course, caplog):
    Assignment.objects.create(course=course, slug="long", title="Long", script_template="sleep 300\n", gpus=0)
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "long"]), submit_form(gpus="0"))
    job = dispatch(Job.objects.get())
    assert client.post(reverse("jobs:job-cancel", args=[job.uuid])).status_code == 302
    caplog.handler.addFilter(ContextFilter())  # what the portal's log handlers add to every record

    with caplog.at_level(logging.DEBUG, logger="slurm.runner"):
        job_scancel(job.pk)

    scancels = [record for record in caplog.records if "scancel" in record.getMessage()]
    assert scancels and {record.job for record in scancels} == {str(job.uuid)}
    wait_for_status(job, Status.CANCELLED)
