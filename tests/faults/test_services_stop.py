"""The lab's own services stop for real while jobs are submitted, synced and finish: slurmctld, slurmdbd
and PostgreSQL. Each test starts what it stopped again, even when it fails. Nothing is lost, nothing is
sent twice, and the student is told the status is the last one known."""

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

import slurm
from jobs import dispatch
from jobs.models import Job, Status
from portal.celery import app
from reports.ingest import usage_ingest
from reports.models import UsageRecord
from slurm import states
from tests.behaviour_helpers import slurm_job_ids, usage_caught_up
from tests.conftest import submit_form, wait_for_status
from tests.http_helpers import celery_queue_clear
from tests.service_account import running_portal, service_media  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
RUN = Path("/var/lib/labqueue/labcluster/run")


@contextmanager
def stopped(daemon: str) -> Iterator[None]:
    """Stop a lab Slurm daemon (SIGTERM, as a crash or maintenance would), then bring it back."""
    pid = int((RUN / f"{daemon}.pid").read_text())
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists():
            assert time.monotonic() < deadline, f"{daemon} did not stop"
            time.sleep(0.2)
        yield
    finally:
        # Back, and proven to run a job again (the smoke job) before the next test uses the cluster.
        up = subprocess.run(
            [str(REPO / "scripts" / "labcluster"), "up"],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "LABCLUSTER_SMOKE": "1"},
        )
        assert up.returncode == 0, f"labcluster up failed after {daemon} stopped:\n{up.stdout}\n{up.stderr}"
        accounting_settled()


def accounting_settled(seconds: float = 60) -> None:
    """Right after a restart, slurmdbd may record a job's end before its exit code: wait until a job that
    exits 3 is recorded with it, so the next test reads settled accounting."""
    job_id = subprocess.run(
        [
            "runuser",
            "-u",
            "student1",
            "--",
            "sbatch",
            "--parsable",
            "-A",
            "cs101",
            "-o",
            "/dev/null",
            "--wrap",
            "exit 3",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd="/tmp",
    ).stdout.strip()
    deadline = time.monotonic() + seconds
    while True:
        shown = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State,ExitCode"], capture_output=True, text=True
        )
        if shown.stdout.strip() == "FAILED|3:0":
            return
        assert time.monotonic() < deadline, f"accounting never settled: {shown.stdout!r}"
        time.sleep(0.5)


def submitted(client, student) -> Job:
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    return Job.objects.get(user=student)


def test_slurmctld_stopped_during_submit_keeps_the_job_waiting_and_sends_it_once_when_it_returns(
    client, student, assignment
):
    job = submitted(client, student)
    with stopped("slurmctld"):
        with pytest.raises(slurm.SlurmUnavailable):
            dispatch.job_dispatch(job_id=job.pk)
        job.refresh_from_db()
        assert job.status == Status.QUEUED
        page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
        assert "The cluster is not answering right now" in page

    dispatch.job_dispatch(job_id=job.pk)  # the task's retry, once the controller is back
    job = wait_for_status(job, Status.COMPLETED)
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}


def test_slurmctld_stopped_during_sync_keeps_the_last_known_status_and_says_so(client, student, assignment, settings):
    job = submitted(client, student)
    dispatch.job_dispatch(job_id=job.pk)
    dispatch.jobs_sync()
    job.refresh_from_db()
    checked = job.checked_at
    settings.LABQUEUE_SYNC_SECONDS = 1
    with stopped("slurmctld"):
        with pytest.raises(slurm.SlurmUnavailable):
            dispatch.jobs_sync()
        job.refresh_from_db()
        assert job.status in (Status.PENDING, Status.RUNNING) and job.checked_at == checked
        time.sleep(3.5)  # three sync periods without an answer: what makes the page say it is out of date
        page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
        assert 'id="out-of-date"' in page and "Your job is not lost" in page

    job = wait_for_status(job, Status.COMPLETED)
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}


def test_slurmdbd_stopped_while_a_job_finishes_then_states_and_usage_catch_up(client, student, assignment):
    job = submitted(client, student)
    with stopped("slurmdbd"):
        dispatch.job_dispatch(job_id=job.pk)  # sbatch needs only the controller
        job.refresh_from_db()
        deadline = time.monotonic() + 120
        while (entry := slurm.queue().get(job.slurm_job_id)) is not None and states.is_live(entry.state):
            assert time.monotonic() < deadline, "the job never finished"
            time.sleep(0.5)
        with pytest.raises(slurm.SlurmUnavailable):
            dispatch.jobs_sync()
        with pytest.raises(slurm.SlurmUnavailable):
            usage_ingest()
        job.refresh_from_db()
        assert job.status == Status.PENDING and job.left_queue_at is not None
        page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
        assert "waiting for the cluster&#x27;s accounting to confirm how it ended" in page

    deadline = time.monotonic() + 120  # slurmctld hands slurmdbd the records it kept meanwhile
    while job.status != Status.COMPLETED:
        assert time.monotonic() < deadline, f"still {job.status}"
        dispatch.jobs_sync()
        job.refresh_from_db()
        time.sleep(0.5)
    usage_caught_up(job)
    assert UsageRecord.objects.filter(slurm_job_id=job.slurm_job_id).count() == 1
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}


def postgres_restart() -> None:
    clusters = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True, check=True).stdout.split()
    version, name = clusters[0], clusters[1]
    subprocess.run(["pg_ctlcluster", version, name, "restart", "-m", "fast"], check=True, timeout=120)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("service_media")
def test_postgresql_restarted_during_sync_cycles_loses_nothing_and_the_worker_carries_on(
    client, student, assignment, settings, tmp_path
):
    celery_queue_clear()
    job = submitted(client, student)
    with running_portal(settings, tmp_path, workers=1) as portal:
        deadline = time.monotonic() + 60
        while job.status == Status.QUEUED:
            assert time.monotonic() < deadline
            time.sleep(0.5)
            job.refresh_from_db()
        for _ in range(3):
            app.send_task("jobs.tasks.jobs_sync")
        postgres_restart()  # while those cycles run
        connection.close()  # this test's own connection died with the server

        deadline = time.monotonic() + 120
        while job.status != Status.COMPLETED:
            assert time.monotonic() < deadline, f"still {job.status}"
            app.send_task("jobs.tasks.jobs_sync")
            time.sleep(1)
            job.refresh_from_db()
        assert all(worker.poll() is None for worker in portal.workers), "the worker survived the restart"
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}
