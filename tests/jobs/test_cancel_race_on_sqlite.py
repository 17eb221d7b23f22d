"""The same races on a development SQLite database, where a status change is an UPDATE and an INSERT in one
transaction (PostgreSQL makes them one statement): the same outcomes, and the history says who moved the job."""

import pytest

from jobs.models import JobEvent, Status
from tests.jobs.test_cancel_race import (
    CANCELLED,
    SUBMITTED,
    cancel_as_the_worker_takes_the_job_is_asked_of_the_worker,
    double_click_cancels_once,
)
from tests.reports.test_report_on_sqlite import on_sqlite, sqlite_default  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_sqlite")]


def test_on_sqlite_a_queued_job_cancelled_twice_at_once_is_cancelled_once(client, student, assignment):
    job = double_click_cancels_once(client, student)

    history = JobEvent.objects.filter(job=job).values_list("cause", "from_status", "to_status", "actor")
    assert list(history) == [
        (SUBMITTED, "", Status.QUEUED, student.pk),
        (CANCELLED, Status.QUEUED, Status.CANCELLED, student.pk),
    ]


def test_on_sqlite_cancel_pressed_as_the_worker_takes_the_job_is_asked_of_the_worker(client, student, assignment):
    cancel_as_the_worker_takes_the_job_is_asked_of_the_worker(client, student)
