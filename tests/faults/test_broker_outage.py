"""Redis, the Celery broker, stops while a student submits, while the worker is inside sbatch, and while
jobs run. The web server and worker run as the service account against a Redis of this test's own (a real
redis-server on a free port, tests/faults/conftest.py), which the test stops and starts for real; the lab
cluster runs the job.
"""

import pytest
from celery import Celery

from jobs.enqueue import SAVED_NOT_SENT
from jobs.models import Job, Status
from tests.behaviour_helpers import slurm_job_ids
from tests.conftest import submit_form
from tests.faults.conftest import sbatch_running_for, wait_for, wait_until
from tests.service_account import running_portal, service_media  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]


def test_a_submission_while_the_broker_is_down_lands_on_the_job_page_and_is_sent_once_when_it_returns(
    settings, tmp_path, student, assignment, broker
):
    with running_portal(settings, tmp_path, workers=0, LABQUEUE_REDIS_URL=broker.url) as portal:
        broker.stop()
        browser = portal.browser_for(student)
        data = {key: value for key, value in submit_form().items() if key != "uploads"}

        sent = portal.submit(browser, "cs101", "hello", data)

        assert sent.status_code == 302, sent.text[:2000]
        job = Job.objects.get(user=student)
        assert sent.headers["Location"] == f"/jobs/{job.uuid}/"
        assert job.status == Status.QUEUED and job.enqueue_failed
        page = browser.get(portal.base + sent.headers["Location"], timeout=30).text
        assert "Your job is saved. The portal could not hand it to its worker just now" in page
        assert job.message == SAVED_NOT_SENT

        broker.start()
        portal.start_worker()
        beat = Celery(broker=broker.url)  # what beat sends every LABQUEUE_SYNC_SECONDS
        job = wait_for(
            job, Status.PENDING, Status.RUNNING, Status.COMPLETED, nudge=lambda: beat.send_task("jobs.tasks.jobs_sync")
        )

        assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "sent exactly once"
        assert job.submit_attempts == 1 and not job.enqueue_failed


def test_the_broker_stopping_while_jobs_run_leaves_pages_working_and_the_worker_catches_up(
    settings, tmp_path, student, assignment, broker
):
    with running_portal(settings, tmp_path, workers=1, LABQUEUE_REDIS_URL=broker.url) as portal:
        browser = portal.browser_for(student)
        data = {key: value for key, value in submit_form().items() if key != "uploads"}
        sent = portal.submit(browser, "cs101", "hello", data)
        assert sent.status_code == 302
        job = wait_for(Job.objects.get(user=student), Status.PENDING, Status.RUNNING, Status.COMPLETED)

        broker.stop()  # while the job runs: no sync can be sent or received
        assert browser.get(portal.base + sent.headers["Location"], timeout=30).status_code == 200
        assert browser.get(portal.base + "/jobs/", timeout=30).status_code == 200
        broker.start()

        beat = Celery(broker=broker.url)
        job = wait_for(job, Status.COMPLETED, nudge=lambda: beat.send_task("jobs.tasks.jobs_sync"))
        assert all(worker.poll() is None for worker in portal.workers), "the worker reconnected by itself"
        assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}


def test_the_broker_stopping_while_the_worker_is_inside_sbatch_still_records_the_job_once(
    settings, tmp_path, student, assignment, broker, controller
):
    with running_portal(settings, tmp_path, workers=0, LABQUEUE_REDIS_URL=broker.url) as portal:
        browser = portal.browser_for(student)
        data = {key: value for key, value in submit_form().items() if key != "uploads"}
        sent = portal.submit(browser, "cs101", "hello", data)
        assert sent.status_code == 302
        job = Job.objects.get(user=student)
        portal.start_worker(SLURM_CONF=controller(delay=4))  # a slow controller: sbatch takes 4 s
        wait_until(lambda: sbatch_running_for(job), "the worker never reached sbatch")

        broker.stop()  # the dispatch task can no longer be acknowledged
        job = wait_for(job, Status.PENDING, Status.RUNNING, Status.COMPLETED, seconds=60)
        assert browser.get(portal.base + sent.headers["Location"], timeout=30).status_code == 200
        broker.start()

        beat = Celery(broker=broker.url)
        job = wait_for(job, Status.COMPLETED, nudge=lambda: beat.send_task("jobs.tasks.jobs_sync"))
        assert all(worker.poll() is None for worker in portal.workers), "the worker reconnected by itself"
        assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "sent exactly once"
        assert job.submit_attempts == 1
