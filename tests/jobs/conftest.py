"""Fixtures shared by the job tests."""

from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from tests.conftest import submit_form


@pytest.fixture
def finished_job(client, student, assignment) -> Job:
    """A job the student submitted in the browser that has completed, with an empty job directory
    for the test to fill with what the job would have left there. No cluster: the fields are the
    ones the sync writes for a finished job."""
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get()
    Path(job.workdir).mkdir(parents=True)
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=Status.COMPLETED,
        slurm_state="COMPLETED",
        slurm_job_id="4343",
        exit_code=0,
        submitted_at=now,
        started_at=now,
        ended_at=now,
        elapsed_seconds=2,
    )
    job.refresh_from_db()
    return job
