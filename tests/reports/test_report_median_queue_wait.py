"""The median queue wait of the course report: the middle wait of an odd count, the mean of the two
middle waits of an even count, blank when no job has started. Jobs that never started do not count.

The same report runs on PostgreSQL (percentile_cont) and on the demo's SQLite database (a registered
aggregate); run this file with DATABASE_URL unset or sqlite:///... to check the SQLite one.
"""

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from reports.models import UsageRecord
from reports.queries import Usage

WAIT_COLUMN = 1 + Usage.HEADER.index("Median queue wait (s)")
# A whole day in the past, so the report's day holds the records at whatever time the suite runs.
NOON_YESTERDAY = timezone.localtime().replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=1)


def record(job_id: int, *, waited: int | None, state: str = "COMPLETED") -> UsageRecord:
    submitted = NOON_YESTERDAY
    started = submitted + timedelta(seconds=waited) if waited is not None else None
    return UsageRecord.objects.create(
        cluster="lab",
        slurm_job_id=str(job_id),
        submitted_at=submitted,
        started_at=started,
        ended_at=started + timedelta(minutes=5) if started else submitted + timedelta(minutes=1),
        user="student1",
        account="cs101",
        state=state if started else "CANCELLED",
        gpus=1,
        cpus=1,
        ingested_at=timezone.now(),
    )


def total_wait(client, instructor) -> str:
    client.force_login(instructor)
    day = NOON_YESTERDAY.date()
    response = client.get(reverse("reports:course-report-csv", args=["cs101"]), {"first": day, "last": day})
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    total = next(row for row in rows if row[0] == "total")
    return total[WAIT_COLUMN]


@pytest.mark.parametrize(
    ("waits", "median"),
    [([30, 10, 600], "30"), ([10, 30, 50, 70], "40"), ([20], "20"), ([None, 10, 40], "25"), ([None], "")],
)
def test_the_course_report_shows_the_median_queue_wait_of_the_jobs_that_started(client, instructor, waits, median):
    for job_id, waited in enumerate(waits, start=100):
        record(job_id, waited=waited)

    assert total_wait(client, instructor) == median
