"""The worker dies while a job is being sent, and comes back.

A controller that accepts connections but never answers keeps `sbatch` waiting, so the test knows the
worker is inside sbatch when it SIGKILLs the worker's whole process tree (sbatch included), as an OOM
kill or a power cut would. Once a worker is back, the next sweep finds the job its dead process held,
sends it (after checking Slurm by name), and the job runs exactly once.
"""

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from jobs.tasks import jobs_sync
from portal.celery import app
from tests.behaviour_helpers import make_stale, slurm_conf_with, slurm_job_ids, tasks_run_in_process
from tests.conftest import dispatch, submit_form
from tests.http_helpers import celery_queue_clear
from tests.service_account import running_portal, service_media, stop  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def silent_controller(job_root) -> Iterator[str]:
    """SLURM_CONF for a controller port that accepts and then says nothing (readable by the students)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    conf = slurm_conf_with(job_root / "silent-controller", SlurmctldPort=listener.getsockname()[1], MessageTimeout=8)
    yield conf
    listener.close()
    for connection in held:
        connection.close()


def sbatch_running_for(job: Job) -> bool:
    """An sbatch of this job is running (as the student)."""
    found = subprocess.run(
        ["pgrep", "-u", job.run_as, "-f", f"sbatch .*--job-name={job.slurm_name}"], capture_output=True
    )
    return found.returncode == 0


@pytest.mark.usefixtures("service_media")
def test_a_worker_killed_inside_sbatch_is_recovered_at_the_next_sweep_and_the_job_runs_once(
    client, settings, tmp_path, student, assignment, silent_controller
):
    celery_queue_clear()
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get(user=student)

    with running_portal(settings, tmp_path, workers=0) as portal:
        dying = portal.start_worker(SLURM_CONF=silent_controller, LABQUEUE_SLURM_TIMEOUT="10")
        deadline = time.monotonic() + 60
        while not sbatch_running_for(job):
            assert time.monotonic() < deadline, "the worker never reached sbatch"
            time.sleep(0.2)
        job.refresh_from_db()
        assert job.status == Status.SUBMITTING and job.dispatch_owner
        stop(dying, 9)  # SIGKILL to the worker's whole process tree, sbatch included
        # The worker may not signal the student's sbatch: it lives on until Slurm's own MessageTimeout.
        deadline = time.monotonic() + 30
        while sbatch_running_for(job):
            assert time.monotonic() < deadline, "sbatch outlived its MessageTimeout"
            time.sleep(0.2)
        make_stale(job, seconds=11)  # the sending began over LABQUEUE_SLURM_TIMEOUT ago

        portal.start_worker(LABQUEUE_SLURM_TIMEOUT="10")
        app.send_task("jobs.tasks.jobs_sync")  # one beat cycle
        deadline = time.monotonic() + 60
        while job.status in (Status.SUBMITTING, Status.QUEUED):
            assert time.monotonic() < deadline, f"still {job.status} after one sweep: {job.message}"
            time.sleep(0.5)
            job.refresh_from_db()
        assert job.status in (Status.PENDING, Status.RUNNING, Status.COMPLETED), job.message

        deadline = time.monotonic() + 120
        while job.status != Status.COMPLETED:
            assert time.monotonic() < deadline, f"still {job.status}"
            app.send_task("jobs.tasks.jobs_sync")
            time.sleep(1)
            job.refresh_from_db()

    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "exactly one Slurm job"
    assert job.local_failures == 1
    assert job.events.filter(cause__contains="the worker stopped while sending it").exists()


def test_a_job_whose_sending_process_died_after_sbatch_is_adopted_by_name_at_the_next_sweep(
    student, assignment, client, settings
):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = dispatch(Job.objects.get(user=student))
    slurm_id = job.slurm_job_id
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id that no longer exists on this host
    Job.objects.filter(pk=job.pk).update(
        status=Status.SUBMITTING, slurm_job_id="", dispatch_owner=f"{socket.gethostname()}:{gone.pid}"
    )
    make_stale(job, seconds=settings.SLURM_COMMAND_TIMEOUT + 1)  # long before the stale cut-off

    with tasks_run_in_process():
        jobs_sync()  # one beat cycle

    job.refresh_from_db()
    assert job.status == Status.PENDING and job.slurm_job_id == slurm_id
    assert slurm_job_ids(job.slurm_name) == {slurm_id}


def test_a_job_another_live_process_is_sending_is_left_alone_until_it_looks_stale(
    student, assignment, client, settings
):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get(user=student)
    Job.objects.filter(pk=job.pk).update(
        status=Status.SUBMITTING, dispatch_owner=f"{socket.gethostname()}:{os.getpid()}"
    )

    with tasks_run_in_process():
        jobs_sync()
    job.refresh_from_db()
    assert job.status == Status.SUBMITTING and job.local_failures == 0, "a live sender is not interrupted"

    make_stale(job)
    with tasks_run_in_process():
        jobs_sync()
    job.refresh_from_db()
    assert job.status == Status.PENDING and job.local_failures == 1
