"""The course report on a development SQLite database: the median queue wait (a registered aggregate, as SQLite
has no percentile function) and the GPU-hours (seconds from SQLite's strftime) are the ones PostgreSQL gives.

The suite runs on PostgreSQL, so here the portal's default database is, for these tests only, a migrated
SQLite file: the report goes through the real view, the ORM and SQLite's own SQL, in this process.
"""

import csv
import io
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.db import connections
from django.db.utils import ConnectionHandler
from django.urls import reverse

from reports.queries import Usage
from tests.reports.test_reconciliation_causes import REPORT, agreeing, totals  # noqa: F401 (a fixture)
from tests.reports.test_report_median_queue_wait import NOON_YESTERDAY, record, total_wait
from tests.reports.test_usage_figures import BAR

GPU_HOURS_COLUMN = 1 + Usage.HEADER.index("GPU-hours")


@pytest.fixture(scope="module")
def sqlite_default(django_db_setup, tmp_path_factory, django_db_blocker) -> Iterator[None]:
    """The default database is a migrated SQLite file while this module's tests run.

    After django_db_setup: the suite's PostgreSQL test database is made on the real default connection first,
    even when these are the session's first database tests."""
    name = str(tmp_path_factory.mktemp("sqlite") / "db.sqlite3")
    sqlite = ConnectionHandler({"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": name}})["default"]
    assert sqlite.vendor == "sqlite"
    postgresql = connections["default"]
    connections._connections.default = sqlite
    try:
        with django_db_blocker.unblock():
            call_command("migrate", verbosity=0)
        yield
    finally:
        connections._connections.default = postgresql
        sqlite.close()


@pytest.fixture
def on_sqlite(sqlite_default, db) -> None:
    """A test's rows go to the SQLite database (and are rolled back there after it).

    SQLite hands out a rolled-back row's id again, so the next test's course has the same id as the last one's:
    the course report cached for that id (course_report_cached) is dropped."""
    assert connections["default"].vendor == "sqlite"
    caches["reports"].clear()


@pytest.mark.parametrize(
    ("waits", "median"),
    [([30, 10, 600], "30"), ([10, 30, 50, 70], "40"), ([20], "20"), ([None, 10, 40], "25"), ([None], "")],
)
def test_the_median_queue_wait_on_sqlite_is_the_middle_wait_of_the_jobs_that_started(
    on_sqlite, client, instructor, waits, median
):
    for job_id, waited in enumerate(waits, start=100):
        record(job_id, waited=waited)

    assert total_wait(client, instructor) == median


def test_the_gpu_hours_on_sqlite_count_each_job_s_seconds_of_run_times_its_gpus(on_sqlite, client, instructor):
    first = record(100, waited=0)  # runs 5 minutes on 1 GPU
    second = record(101, waited=0)
    second.gpus, second.ended_at = 2, second.started_at + timedelta(minutes=30)
    second.save(update_fields=["gpus", "ended_at"])
    assert first.started_at == NOON_YESTERDAY

    client.force_login(instructor)
    day = NOON_YESTERDAY.date()
    response = client.get(reverse("reports:course-report-csv", args=["cs101"]), {"first": day, "last": day})

    assert response.status_code == 200
    total = next(row for row in csv.reader(io.StringIO(response.content.decode())) if row[0] == "total")
    assert total[GPU_HOURS_COLUMN] == f"{(5 * 60 + 2 * 30 * 60) / 3600:.3f}"


@pytest.mark.usefixtures("on_sqlite", "agreeing")  # on_sqlite first: the agreeing jobs go to SQLite
def test_a_job_still_running_counts_alike_on_both_sides_of_the_reconciliation_on_sqlite(client, instructor):
    client.force_login(instructor)
    page = client.get(REPORT).content.decode()

    sides = totals(page)
    assert sides["The portal's jobs"] == sides["Slurm's records (sacct)"], (
        "the running job counts up to the range's end"
    )
    assert 'id="reconciliation-agrees"' in page


def test_the_gpu_hours_per_day_on_sqlite_are_each_day_s_share_of_the_runs(on_sqlite, client, instructor):
    first = record(100, waited=0)  # runs 5 minutes on 1 GPU, from noon yesterday
    first.gpus = 2
    first.save(update_fields=["gpus"])

    client.force_login(instructor)
    day = NOON_YESTERDAY.date()
    page = client.get(reverse("reports:course-report", args=["cs101"]), {"first": day, "last": day})

    assert page.status_code == 200
    assert BAR.findall(page.content.decode()) == [(str(day), f"{2 * 5 * 60 / 3600:.3f}")]
