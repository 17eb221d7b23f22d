"""Cancel pressed while the worker is sending the job: the worker stops the job in Slurm as soon as Slurm has
it; a cancel asked for another job never stops this one."""

import time

import pytest

from jobs.models import Job, Status
from jobs.services import job_cancel
from slurm import runner
from tests.behaviour_helpers import sacct_state, slurm, tasks_run_in_process
from tests.conftest import dispatch, job_row, submitted, wait_for_status

pytestmark = pytest.mark.slurm


def test_cancel_pressed_while_sbatch_runs_stops_the_job_in_slurm_once_it_is_accepted(
    client, student, assignment, monkeypatch
):
    job = submitted(client, student)

    def press_cancel(command: runner.Command) -> None:  # the student presses Cancel as sbatch answers
        if command.tool == "sbatch":
            job_cancel(job=Job.objects.get(pk=job.pk), actor=student)

    monkeypatch.setattr(runner, "observers", [*runner.observers, press_cancel])
    with tasks_run_in_process():
        job = dispatch(job)

    assert job.cancel_requested and job.slurm_job_id
    deadline = time.monotonic() + 60
    while not sacct_state(job.slurm_job_id).startswith("CANCELLED"):
        assert time.monotonic() < deadline, "the worker never stopped the job Slurm accepted"
        time.sleep(0.5)
    assert wait_for_status(job, Status.CANCELLED).status == Status.CANCELLED


def test_a_cancel_asked_for_another_job_being_sent_leaves_this_one_alone(client, student, assignment):
    job_row(student, assignment, status=Status.SUBMITTING, cancel_requested=True)  # another job, cancel asked
    job = submitted(client, student)

    with tasks_run_in_process():
        job = dispatch(job)

    try:
        assert job.status == Status.PENDING and not job.cancel_requested
        assert not job.events.filter(cause__contains="Cancel").exists()
        state = slurm("squeue", "-h", "-t", "all", "-j", job.slurm_job_id, "-o", "%T").strip()
        assert state in ("PENDING", "RUNNING", "COMPLETING", "COMPLETED"), "no scancel reached Slurm"
    finally:
        runner.run(["scancel", job.slurm_job_id])
