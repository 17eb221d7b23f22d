"""Dispatch asks Slurm for an earlier submission by name before it runs sbatch again.

A worker that dies between sbatch and saving the id, or an sbatch answer that is lost, leaves a job
Slurm has but the portal does not know about. Sending it again must adopt that job, not make a second
one: these tests count Slurm's own records of the job name (squeue and sacct), not portal rows. A job
Slurm never got is sent again as a new attempt, checked again and with its files.
"""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Enrollment, StarterFile
from jobs.models import Job, JobEvent, Status
from jobs.staging import staging_dir
from jobs.tasks import job_dispatch, jobs_sync
from tests.behaviour_helpers import (
    make_stale,
    slurm_cleanup,
    slurm_job_ids,
    tasks_run_in_process,
    uploaded_by_the_web_server,
)
from tests.conftest import submit_form, wait_for_status

pytestmark = pytest.mark.slurm

NOTES = b"seed = 7\n"


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


@pytest.fixture
def unsent_job(client, student, assignment) -> Job:
    """A job with an uploaded file, submitted in the browser, as a worker killed after claiming it and before the
    job-directory helper ran leaves it once the sweep gave it back to the queue: its first attempt counted, no job
    directory, nothing in Slurm."""
    client.force_login(student)
    form = submit_form(uploads=[SimpleUploadedFile("notes.txt", NOTES)])
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), form).status_code == 302
    job = Job.objects.get()
    uploaded_by_the_web_server(staging_dir(str(job.uuid)))
    Job.objects.filter(pk=job.pk).update(submit_attempts=1)
    return job


def test_a_job_slurm_never_got_is_sent_again_as_a_second_attempt_with_its_uploaded_files(unsent_job):
    job_dispatch(unsent_job.pk)

    job = Job.objects.get(pk=unsent_job.pk)
    assert job.status == Status.PENDING and job.submit_attempts == 2
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}
    assert Path(job.workdir, "notes.txt").read_bytes() == NOTES


def test_a_job_slurm_never_got_is_checked_again_before_it_is_sent_and_a_student_dropped_meanwhile_is_refused(
    unsent_job, student
):
    Enrollment.objects.filter(user=student).delete()

    job_dispatch(unsent_job.pk)

    job = Job.objects.get(pk=unsent_job.pk)
    assert job.status == Status.REJECTED
    assert "You are no longer enrolled in" in job.message
    assert slurm_job_ids(job.slurm_name) == set()
    assert not Path(job.workdir).exists()


@pytest.mark.parametrize("earlier_attempts", [0, 1], ids=["first-sending", "sent-again"])
def test_a_job_is_refused_when_its_starter_file_changed_in_storage_since_it_was_saved(
    client, student, assignment, settings, earlier_attempts
):
    """At the job's first sending, and at a later one after an attempt that never reached Slurm."""
    settings.MEDIA_ROOT.mkdir(parents=True, exist_ok=True)
    StarterFile.objects.create(assignment=assignment, name="train.py", file=SimpleUploadedFile("train.py", b"1\n"))
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(submit_attempts=earlier_attempts)  # 1: an attempt that never reached Slurm
    kept = job.assignment_version.starter_files.get()
    Path(kept.file.path).write_bytes(b"2\n")  # written over where it is stored (an operator, a restore)

    job_dispatch(job.pk)

    job.refresh_from_db()
    assert job.status == Status.REJECTED
    assert "The starter file 'train.py' is no longer the one this job's version" in job.message
    assert slurm_job_ids(job.slurm_name) == set()
