"""The real path: the web request commits, the task goes through Redis, a Celery worker submits."""

import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.urls import reverse

from jobs.models import Job, Status
from jobs.tasks import jobs_sync
from portal.celery import app
from tests.conftest import submit_form

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]


def wait_until(check, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


def test_a_submitted_job_travels_through_redis_to_a_worker_and_completes(client, student, assignment):
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        client.force_login(student)
        client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
        job = Job.objects.get()
        wait_until(lambda: Job.objects.get(pk=job.pk).status != Status.QUEUED)

        def synced_to_completion() -> bool:
            jobs_sync.delay()
            time.sleep(1)
            return Job.objects.get(pk=job.pk).status == Status.COMPLETED

        wait_until(synced_to_completion)
    job.refresh_from_db()
    assert job.slurm_job_id and job.exit_code == 0
    statuses = [event.to_status for event in job.events.all()]
    assert statuses[:3] == [Status.QUEUED, Status.SUBMITTING, Status.PENDING]
    assert statuses[-1] == Status.COMPLETED
