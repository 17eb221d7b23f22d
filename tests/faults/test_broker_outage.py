"""Redis, the Celery broker, stops while a student submits. The web server and worker run as the service
account against a Redis of this test's own (a real redis-server on a free port), which the test stops
and starts for real; the lab cluster runs the job.
"""

import subprocess
import time
from collections.abc import Iterator

import pytest
from celery import Celery

from jobs.enqueue import SAVED_NOT_SENT
from jobs.models import Job, Status
from tests.behaviour_helpers import slurm_job_ids
from tests.conftest import submit_form
from tests.service_account import Portal, free_port, running_portal, service_media  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]


class Broker:
    """A redis-server of this test's own that can be stopped and started again on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).stdout != b"PONG\n":
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def broker() -> Iterator[Broker]:
    own = Broker()
    own.start()
    yield own
    own.stop()


def wait_for(job: Job, *statuses: str, seconds: float = 120, nudge=None) -> Job:
    deadline = time.monotonic() + seconds
    while job.status not in statuses:
        assert time.monotonic() < deadline, f"job still {job.status}: {job.message}"
        if nudge:
            nudge()
        time.sleep(1)
        job.refresh_from_db()
    return job


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
        assert portal.server_errors() == []


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
        assert portal.server_errors() == []
