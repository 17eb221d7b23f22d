"""The same double click on a development SQLite database, where a status change is an UPDATE and an INSERT in
one transaction (PostgreSQL makes them one statement): the job is cancelled once, with its end and update time,
and the second request records nothing."""

import pytest

from jobs.models import JobEvent, Status
from tests.jobs.test_cancel_race import cancel_twice_at_once
from tests.reports.test_report_on_sqlite import on_sqlite, sqlite_default  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("on_sqlite")]


def test_on_sqlite_a_queued_job_cancelled_twice_at_once_is_cancelled_once(client, student, assignment):
    job = cancel_twice_at_once(client, student)

    assert job.status == Status.CANCELLED and job.ended_at is not None and not job.cancel_requested
    assert job.updated_at >= job.ended_at
    causes = list(JobEvent.objects.filter(job=job).values_list("cause", "from_status", "to_status", "actor"))
    assert causes == [
        ("Submitted in the portal.", "", Status.QUEUED, student.pk),
        ("Cancelled before it reached the cluster.", Status.QUEUED, Status.CANCELLED, student.pk),
    ]
