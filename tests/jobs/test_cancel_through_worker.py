"""Cancel on the job page hands the request to the worker: commit -> cancel task -> Redis -> worker -> scancel."""

import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job, JobEvent, Status
from jobs.tasks import jobs_sync
from portal.celery import app
from tests.behaviour_helpers import sacct_state, slurm_cleanup, wait_until
from tests.conftest import submit_form

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


def synced_to(job: Job, status: str) -> bool:
    """One periodic sync through the worker, then: has the job reached `status`?"""
    jobs_sync.delay()
    time.sleep(0.5)
    return Job.objects.get(pk=job.pk).status == status


def test_cancel_on_the_job_page_stops_a_running_job_through_the_worker(client, student, course):
    Assignment.objects.create(course=course, slug="long", title="Long", script_template="sleep 300\n", gpus=0)
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        client.force_login(student)
        client.post(reverse("jobs:job-create", args=["cs101", "long"]), submit_form(gpus="0"))
        job = Job.objects.get()
        wait_until(lambda: synced_to(job, Status.RUNNING), timeout=90, what="the job to run")

        response = client.post(reverse("jobs:job-cancel", args=[job.uuid]))
        assert response.status_code == 302

        wait_until(lambda: synced_to(job, Status.CANCELLED), timeout=60, what="the worker to cancel the job")
    job.refresh_from_db()
    assert sacct_state(job.slurm_job_id).startswith("CANCELLED"), "Slurm's own record says cancelled"
    assert job.slurm_state == "CANCELLED" and job.cancel_requested
    assert JobEvent.objects.filter(job=job, cause="Cancel requested.", actor=student).exists()
    assert [e.to_status for e in job.events.exclude(to_status="")][-2:] == [Status.RUNNING, Status.CANCELLED]
