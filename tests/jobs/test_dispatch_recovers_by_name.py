"""Dispatch asks Slurm for an earlier submission by name before it runs sbatch again.

A worker that dies between sbatch and saving the id, or an sbatch answer that is lost, leaves a job
Slurm has but the portal does not know about. Sending it again must adopt that job, not make a second
one: these tests count Slurm's own records of the job name (squeue and sacct), not portal rows.
"""

import pytest
from django.urls import reverse

from jobs.models import Job, JobEvent, Status
from jobs.tasks import job_dispatch, jobs_sync
from tests.behaviour_helpers import make_stale, slurm_cleanup, slurm_job_ids, tasks_run_in_process
from tests.conftest import submit_form, wait_for_status

pytestmark = pytest.mark.slurm


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


@pytest.fixture
def sent_job(client, student, assignment) -> Job:
    """A job submitted in the browser and sent to Slurm by the submit task."""
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    job_dispatch(job.pk)
    job.refresh_from_db()
    assert job.status == Status.PENDING and job.submit_attempts == 1
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}
    return job


def test_a_job_a_crashed_worker_left_submitting_is_adopted_by_name_by_the_sweep_not_sent_twice(sent_job):
    slurm_id = sent_job.slurm_job_id
    # What a worker killed right after sbatch leaves behind: sbatch ran, the id was never saved.
    Job.objects.filter(pk=sent_job.pk).update(
        status=Status.SUBMITTING, slurm_job_id="", slurm_state="", submitted_at=None
    )
    make_stale(sent_job)

    with tasks_run_in_process():
        jobs_sync()  # the beat's periodic task: puts the interrupted job back in the queue and sends it again

    job = Job.objects.get(pk=sent_job.pk)
    assert slurm_job_ids(job.slurm_name) == {slurm_id}, "Slurm must hold exactly one job with this name"
    assert job.status == Status.PENDING and job.slurm_job_id == slurm_id
    assert job.submit_attempts == 1, "no second sbatch"
    assert job.local_failures == 1, "an interrupted submission counts against the job's local-failure limit"
    assert JobEvent.objects.filter(job=job, to_status=Status.PENDING).count() == 2, "accepted, then adopted"
    assert wait_for_status(job, Status.COMPLETED).exit_code == 0


def test_a_submit_task_replayed_after_a_lost_sbatch_answer_adopts_the_job_slurm_already_has(sent_job):
    slurm_id = sent_job.slurm_job_id
    # sbatch succeeded but its answer was lost: the task gave the job back to the queue to try again.
    Job.objects.filter(pk=sent_job.pk).update(status=Status.QUEUED, slurm_job_id="", slurm_state="")

    job_dispatch(sent_job.pk)  # Celery's retry of the same task

    job = Job.objects.get(pk=sent_job.pk)
    assert slurm_job_ids(job.slurm_name) == {slurm_id}
    assert job.status == Status.PENDING and job.slurm_job_id == slurm_id
    assert job.submit_attempts == 1
