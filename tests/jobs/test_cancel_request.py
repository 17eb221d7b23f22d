"""Pressing Cancel on a job Slurm has: the request is recorded on that job alone, in its history under the name
of the person who asked, and once the request commits the worker is sent one scancel task for that job.

No job reaches Slurm here: the jobs are rows as the sync would have left them, and the task waits in the broker.
"""

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from tests.conftest import job_row
from tests.http_helpers import celery_queue_clear, queued_tasks, table_rows


def cancel(client, job: Job):
    return client.post(reverse("jobs:job-cancel", args=[job.uuid]))


def test_cancelling_one_running_job_leaves_the_students_other_running_job_alone(client, student, assignment):
    job = job_row(student, assignment, status=Status.RUNNING, slurm_job_id="4242")
    other = job_row(student, assignment, status=Status.RUNNING, slurm_job_id="4243")
    client.force_login(student)

    assert cancel(client, job).status_code == 302

    assert Job.objects.get(pk=job.pk).cancel_requested
    assert not Job.objects.get(pk=other.pk).cancel_requested
    page = client.get(reverse("jobs:job-detail", args=[other.uuid])).content.decode()
    assert 'id="cancel-job"' in page, "the other job can still be cancelled"


def test_the_jobs_history_names_who_asked_to_cancel_it(client, student, ta, assignment):
    job = job_row(student, assignment, status=Status.PENDING, slurm_job_id="4242")
    client.force_login(student)
    cancel(client, job)

    client.force_login(ta)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert [(cause, who) for _at, cause, who in table_rows(page, "history")] == [("Cancel requested.", str(student))]


@pytest.mark.django_db(transaction=True)  # the task is sent when the request's transaction commits
def test_cancelling_a_waiting_job_sends_the_worker_one_scancel_task_for_that_job(client, student, assignment):
    job = job_row(student, assignment, status=Status.PENDING, slurm_job_id="4242")
    client.force_login(student)
    celery_queue_clear()
    try:
        cancel(client, job)
        assert queued_tasks() == [("jobs.tasks.job_scancel", [job.pk], {})]
    finally:
        celery_queue_clear()
