"""The worker dies while a job is being sent (before, inside and right after sbatch), and comes back.

Controllers that misbehave on the way to the real slurmctld (tests/faults/conftest.py) hold the worker at
a known point: a silent one keeps it waiting inside squeue or sbatch, one that loses its answers lets
Slurm take the job while sbatch never learns its id. The test then SIGKILLs the worker's whole process
tree, as an OOM kill or a power cut would. Once a worker is back, the next sweep finds the job its dead
process held, checks Slurm by name, and the job runs exactly once.
"""

import os
import socket

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from jobs.tasks import jobs_sync
from portal.celery import app
from tests.behaviour_helpers import make_stale, slurm_job_ids, tasks_run_in_process
from tests.conftest import submit_form
from tests.faults.conftest import running, sbatch_running_for, wait_for, wait_until
from tests.http_helpers import celery_queue_clear
from tests.service_account import running_portal, service_media, stop  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]


def submitted(client, student) -> Job:
    """A job the student submitted through the form; its submit task waits in the queue for the worker the
    test starts."""
    celery_queue_clear()
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    return Job.objects.get(user=student)


@pytest.mark.usefixtures("service_media")
def test_a_worker_killed_inside_sbatch_is_recovered_at_the_next_sweep_and_the_job_runs_once(
    client, settings, tmp_path, student, assignment, silent_controller
):
    job = submitted(client, student)

    with running_portal(settings, tmp_path, workers=0) as portal:
        dying = portal.start_worker(
            SLURM_CONF=silent_controller, LABQUEUE_SLURM_TIMEOUT="10", LABQUEUE_JOBDIR_TIMEOUT="10"
        )
        wait_until(lambda: sbatch_running_for(job), "the worker never reached sbatch")
        job.refresh_from_db()
        assert job.status == Status.SUBMITTING and job.dispatch_owner
        stop(dying, 9)  # SIGKILL to the worker's whole process tree, sbatch included
        # The worker may not signal the student's sbatch: it lives on until Slurm's own MessageTimeout.
        wait_until(lambda: not sbatch_running_for(job), "sbatch outlived its MessageTimeout", seconds=30)
        make_stale(job, seconds=11)  # the sending began over LABQUEUE_JOBDIR_TIMEOUT ago

        portal.start_worker(LABQUEUE_SLURM_TIMEOUT="10", LABQUEUE_JOBDIR_TIMEOUT="10")
        app.send_task("jobs.tasks.jobs_sync")  # one beat cycle
        job = wait_for(job, Status.PENDING, Status.RUNNING, Status.COMPLETED, seconds=60)
        job = wait_for(job, Status.COMPLETED, nudge=lambda: app.send_task("jobs.tasks.jobs_sync"))

    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "exactly one Slurm job"
    assert job.local_failures == 1
    assert job.events.filter(cause__contains="the worker stopped while sending it").exists()


@pytest.mark.usefixtures("service_media")
def test_a_worker_killed_before_sbatch_is_recovered_at_the_next_sweep_and_the_job_runs_once(
    client, settings, tmp_path, student, assignment, silent_controller
):
    """An earlier attempt was interrupted, so this one first asks Slurm by name whether it has the job;
    the worker dies there, before any sbatch of this attempt."""
    job = submitted(client, student)
    Job.objects.filter(pk=job.pk).update(submit_attempts=1)

    with running_portal(settings, tmp_path, workers=0) as portal:
        dying = portal.start_worker(
            SLURM_CONF=silent_controller, LABQUEUE_SLURM_TIMEOUT="10", LABQUEUE_JOBDIR_TIMEOUT="10"
        )
        wait_until(lambda: running("labqueue", f"squeue .*{job.slurm_name}"), "the worker never asked Slurm by name")
        job.refresh_from_db()
        assert job.status == Status.SUBMITTING and job.dispatch_owner
        stop(dying, 9)
        assert not sbatch_running_for(job) and slurm_job_ids(job.slurm_name) == set(), "killed before sbatch"
        make_stale(job, seconds=11)

        portal.start_worker(LABQUEUE_SLURM_TIMEOUT="10", LABQUEUE_JOBDIR_TIMEOUT="10")
        sync = lambda: app.send_task("jobs.tasks.jobs_sync")  # noqa: E731 (one beat cycle)
        job = wait_for(job, Status.PENDING, Status.RUNNING, Status.COMPLETED, seconds=60, nudge=sync)
        job = wait_for(job, Status.COMPLETED, nudge=sync)

    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "exactly one Slurm job"
    assert job.local_failures == 1


@pytest.mark.usefixtures("service_media")
def test_a_worker_killed_right_after_slurm_accepted_its_sbatch_is_adopted_by_name_and_the_job_runs_once(
    client, settings, tmp_path, student, assignment, controller
):
    """slurmctld takes the job but its answer never reaches sbatch: the worker dies not knowing the job id."""
    job = submitted(client, student)

    with running_portal(settings, tmp_path, workers=0) as portal:
        dying = portal.start_worker(
            SLURM_CONF=controller(drop_replies=True), LABQUEUE_SLURM_TIMEOUT="10", LABQUEUE_JOBDIR_TIMEOUT="10"
        )
        wait_until(lambda: slurm_job_ids(job.slurm_name), "Slurm never received the job")
        accepted = slurm_job_ids(job.slurm_name)
        job.refresh_from_db()
        assert job.status == Status.SUBMITTING and not job.slurm_job_id, "the portal does not know it yet"
        stop(dying, 9)
        wait_until(lambda: not sbatch_running_for(job), "sbatch outlived its MessageTimeout", seconds=30)
        make_stale(job, seconds=11)

        portal.start_worker(LABQUEUE_SLURM_TIMEOUT="10", LABQUEUE_JOBDIR_TIMEOUT="10")
        app.send_task("jobs.tasks.jobs_sync")  # one beat cycle
        job = wait_for(job, Status.PENDING, Status.RUNNING, Status.COMPLETED, seconds=60)
        assert {job.slurm_job_id} == accepted, "adopted: the job Slurm has, not a second one"
        job = wait_for(job, Status.COMPLETED, nudge=lambda: app.send_task("jobs.tasks.jobs_sync"))

    assert slurm_job_ids(job.slurm_name) == accepted
    assert job.submit_attempts == 1


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
