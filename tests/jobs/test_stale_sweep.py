"""The periodic sweep re-sends a queued job whose submit task was lost, and leaves fresh ones alone.

In a plain django_db test the submit task enqueued on commit never fires: that is a lost task.
"""

import pytest
from celery.contrib.testing.worker import start_worker
from django.urls import reverse

from jobs.models import Job, Status
from jobs.tasks import jobs_sync
from portal.celery import app
from tests.behaviour_helpers import make_stale, slurm_cleanup, slurm_job_ids, tasks_run_in_process, wait_until
from tests.conftest import submit_form, wait_for_status

pytestmark = pytest.mark.slurm


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


def submit(client, student) -> Job:
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    assert job.status == Status.QUEUED
    return job


def test_a_queued_job_whose_submit_task_was_lost_is_sent_by_the_periodic_sweep(client, student, assignment):
    job = submit(client, student)
    make_stale(job)

    with tasks_run_in_process():
        jobs_sync()

    job.refresh_from_db()
    assert job.status == Status.PENDING
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}
    assert wait_for_status(job, Status.COMPLETED).exit_code == 0


def test_a_fresh_queued_job_is_not_sent_again_by_the_sweep(client, student, assignment):
    job = submit(client, student)

    with tasks_run_in_process():
        jobs_sync()

    job.refresh_from_db()
    assert job.status == Status.QUEUED and job.submit_attempts == 0
    assert slurm_job_ids(job.slurm_name) == set()


@pytest.mark.django_db(transaction=True)
def test_a_submit_task_the_broker_lost_is_sent_again_by_the_sweep_on_a_real_worker(client, student, assignment):
    app.control.purge()
    job = submit(client, student)
    app.control.purge()  # the broker restarted without the task the commit enqueued
    make_stale(job)

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        jobs_sync.delay()
        wait_until(lambda: Job.objects.get(pk=job.pk).slurm_job_id, timeout=60, what="the worker to re-send it")
    job.refresh_from_db()
    assert job.status in (Status.PENDING, Status.RUNNING, Status.COMPLETED)
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}
