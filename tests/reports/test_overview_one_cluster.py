"""The usage overview sums the range's records once on a site of one cluster: its per-cluster lines, which that site
never shows, are summed only where there are several clusters (a campus has tens of thousands of records in the
range, and each sum over them is a tenth of a second)."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from courses.models import Course
from reports.models import AccountingCursor, UsageRecord
from tests.conftest import make_user
from tests.http_helpers import table_rows


def record(job_id: str, *, cluster: str = "lab", account: str = "cs101") -> UsageRecord:
    now = timezone.now()
    return UsageRecord.objects.create(
        cluster=cluster,
        slurm_job_id=job_id,
        submitted_at=now - timedelta(hours=2),
        started_at=now - timedelta(hours=2),
        ended_at=now - timedelta(hours=1),
        user="student1",
        account=account,
        state="COMPLETED",
        gpus=1,
        ingested_at=now,
    )


def overview(client) -> tuple[str, list[str]]:
    """The page (yesterday and today) and the queries that summed usage records."""
    client.force_login(get_user_model().objects.filter(username="ops").first() or make_user("ops", None, is_staff=True))
    today = timezone.localdate()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("reports:usage-overview") + f"?first={today - timedelta(days=1)}&last={today}")
    assert response.status_code == 200
    sums = [query["sql"] for query in queries if 'FROM "jobs_usagerecord"' in query["sql"] and "SUM(" in query["sql"]]
    return response.content.decode(), sums


@pytest.fixture
def one_cluster(settings):
    settings.LABQUEUE_SLURM_CLUSTER = "lab"
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = []


@pytest.mark.usefixtures("one_cluster")
def test_on_a_site_of_one_cluster_the_overview_sums_the_records_once(client, course):
    record("1")
    record("2", account="research")

    page, sums = overview(client)

    assert len(sums) == 1, "the per-account lines; no per-cluster lines, no total of them"
    assert 'id="overview-clusters"' not in page
    rows = {account: jobs for _name, account, jobs, *_ in table_rows(page, "overview")}
    assert rows == {"cs101": "1", "research": "1"}


@pytest.mark.usefixtures("one_cluster")
def test_records_of_another_cluster_still_give_the_overview_its_per_cluster_lines(client, course):
    record("1")
    record("1", cluster="lab2")  # copied while lab2 was set, then the setting went

    page, sums = overview(client)

    assert len(sums) == 3
    assert [row[:2] for row in table_rows(page, "overview-clusters")] == [
        ["lab", "1"],
        ["lab2", "1"],
        ["All clusters", "2"],
    ]


def test_the_overview_is_summed_again_only_when_a_record_or_an_ingest_mark_changed_and_shows_new_courses_at_once(
    client, course
):
    record("1")
    first, sums = overview(client)
    assert len(sums) >= 1 and "Figures as of" in first

    again, sums = overview(client)
    assert sums == [] and table_rows(again, "overview") == table_rows(first, "overview")

    Course.objects.create(slug="cs105", code="CS105", title="New", term="Fall", slurm_account="cs105")
    record("2", account="research")  # the next ingest's record
    renewed, sums = overview(client)
    rows = {account: jobs for _name, account, jobs, *_ in table_rows(renewed, "overview")}
    assert len(sums) >= 1 and rows == {"cs101": "1", "cs105": "0", "research": "1"}

    AccountingCursor.objects.create(cluster="lab", ingested_until=timezone.now())  # an ingest that updated records
    assert overview(client)[1] != []
