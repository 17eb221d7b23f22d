"""Sending a job costs a fixed, small number of SQL statements: each status change and its history row is one
statement (no BEGIN/COMMIT around them), so a burst of submissions does not wait on the database."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobs.lifecycle import job_transition
from jobs.models import Job, JobEvent, Status
from jobs.tasks import job_dispatch
from tests.behaviour_helpers import slurm_cleanup
from tests.conftest import job_row, submit_form

pytestmark = pytest.mark.slurm

WRITES = ("UPDATE", "INSERT", "WITH", "DELETE")


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


def test_sending_a_job_to_slurm_takes_seven_statements_of_which_two_write(client, student, assignment):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()

    with CaptureQueriesContext(connection) as queries:
        job_dispatch(job.pk)

    statements = [query["sql"] for query in queries.captured_queries]
    writes = [sql for sql in statements if sql.lstrip().upper().startswith(WRITES)]
    assert len(statements) == 7, "\n".join(statements)
    assert len(writes) == 2, "the claim and the acceptance, each with its history row"
    assert not [sql for sql in statements if sql.upper() in ("BEGIN", "COMMIT")]
    job.refresh_from_db()
    assert job.status == Status.PENDING and job.slurm_job_id and job.submit_attempts == 1
    assert list(job.events.values_list("from_status", "to_status")) == [
        ("", Status.QUEUED),
        (Status.QUEUED, Status.SUBMITTING),
        (Status.SUBMITTING, Status.PENDING),
    ]


def test_a_status_change_that_lost_the_race_writes_no_history_and_changes_nothing(student, assignment):
    job = job_row(student, assignment, status=Status.QUEUED)
    stale = Job.objects.get(pk=job.pk)
    assert job_transition(job=job, to=Status.CANCELLED, cause="Cancelled first.")

    assert not job_transition(job=stale, to=Status.SUBMITTING, cause="Too late.", dispatch_owner="w1")

    fresh = Job.objects.get(pk=job.pk)
    assert fresh.status == Status.CANCELLED and fresh.dispatch_owner == ""
    assert list(JobEvent.objects.filter(job=job).values_list("to_status", flat=True)) == [Status.CANCELLED]
