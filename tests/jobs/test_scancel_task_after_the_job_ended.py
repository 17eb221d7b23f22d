"""The worker's scancel task for a job that has no Slurm id, or has already ended, runs no scancel."""

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from jobs.tasks import job_scancel
from slurm import runner
from tests.conftest import submit_form


@pytest.fixture
def job(client, student, assignment) -> Job:
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    return Job.objects.get()


def test_a_scancel_task_for_a_job_that_ended_meanwhile_runs_no_scancel(job):
    Job.objects.filter(pk=job.pk).update(status=Status.COMPLETED, slurm_job_id="4242", ended_at=timezone.now())

    with runner.command_log() as commands:
        job_scancel(job.pk)

    assert commands == []
    assert Job.objects.get(pk=job.pk).status == Status.COMPLETED


def test_a_scancel_task_for_a_job_slurm_has_no_id_for_runs_no_scancel(job):
    Job.objects.filter(pk=job.pk).update(status=Status.SUBMITTING, cancel_requested=True)

    with runner.command_log() as commands:
        job_scancel(job.pk)

    assert commands == [], "the worker sending it cancels it once sbatch has answered"
