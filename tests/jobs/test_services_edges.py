"""What the job services promise their callers beyond what today's pages ask of them: a blank note is refused
with its message, a retry's suggested resources are held to each of the course's limits, and a second retry of
one attempt that reaches the database is refused there, never answered with another of the student's jobs.

No job reaches Slurm: the jobs are rows as the portal or the sync would have left them."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.urls import reverse
from django.utils import timezone

from courses.scripting import Resources
from jobs.models import Job, JobEvent, JobNote, Status
from jobs.services import job_note_add, job_submit, retry_suggestion
from tests.conftest import job_row, submitted


def test_a_note_of_only_spaces_is_refused_with_its_message_and_nothing_is_recorded(ta, student, assignment):
    job = job_row(student, assignment, status=Status.FAILED)

    with pytest.raises(ValidationError) as refused:
        job_note_add(job=job, author=ta, text=" \n\t ")

    assert refused.value.messages == ["Write something in the note."]
    assert not JobNote.objects.exists() and not JobEvent.objects.exists()


def test_a_suggested_retry_is_held_to_each_of_the_courses_limits(student, assignment):
    """The course allows 2 GPUs, 4 CPUs, 4000 MB and 30 minutes per job (tests.conftest)."""
    job = job_row(student, assignment, status=Status.FAILED, gpus=2, cpus=3, mem_mb=3000, minutes=45)

    doubled = retry_suggestion(job=job, suggest={"gpus": 2, "cpus": 2, "mem_mb": 2})
    kept = retry_suggestion(job=job, suggest={"minutes": 0})

    assert doubled == Resources(gpus=2, cpus=4, mem_mb=4000, minutes=45), "only what it suggests changes"
    assert kept == Resources(gpus=2, cpus=3, mem_mb=3000, minutes=30), "the same minutes, within the limit"
    small = job_row(student, assignment, status=Status.FAILED, gpus=1, cpus=1, mem_mb=500, minutes=20)
    assert retry_suggestion(job=small, suggest={"minutes": 0}) == Resources(gpus=1, cpus=1, mem_mb=500, minutes=20)


def test_a_second_retry_of_one_attempt_that_reaches_the_database_is_refused_there(client, student, assignment):
    """Two retries of one attempt at once: the one whose new attempt the database refuses (one retry per
    attempt) must not be given another job of the student's in its place (job_retry then opens the attempt the
    other made). Neither attempt was sent from a form, so neither has a form's key to look the job up by."""
    job = submitted(client, student)
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_job_id="4242", ended_at=timezone.now())
    client.post(reverse("jobs:job-retry", args=[job.uuid]), {"same": "1"})
    job.refresh_from_db()
    assert job.submission_key == "" and Job.objects.get(retry_of=job).submission_key == ""

    with pytest.raises(IntegrityError):
        job_submit(
            user=student,
            assignment=assignment,
            values=job.parameters,
            resources=Resources(**job.resources),
            retry_of=job,
            actor=student,
        )
    assert Job.objects.count() == 2
