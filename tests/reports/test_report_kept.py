"""The course report kept in the reports cache, a table every web process and the worker share: the worker
computes it after an accounting ingest and the page reads it without computing it; after a change, the first
request computes it again, and while the worker (or another request) is computing it, the page shows the last one
and says newer figures are coming; forgetting a person drops every kept report, which may name them."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from ops.forget import person_forget
from reports import course_report as kept_reports
from reports.course_report import course_reports_refresh
from reports.models import AccountingCursor, UsageRecord
from reports.pseudonyms import pseudonym
from tests.conftest import make_user
from tests.http_helpers import table_rows
from tests.reports.test_reports_scale import REPORT_PAGE_AGAIN_QUERIES, REPORT_PAGE_QUERIES

pytestmark = pytest.mark.django_db
REPORT = reverse("reports:course-report", args=["cs101"])
UPDATING = "newer figures are being computed, so reload this page in a moment to see them"


def record(course, job_id: int, *, user: str = "student1") -> UsageRecord:
    """A finished one-GPU job on the course's account, inside the page's range (the day the course was made)."""
    started = course.created_at
    return UsageRecord.objects.create(
        cluster="lab",
        slurm_job_id=str(job_id),
        submitted_at=started,
        user=user,
        account=course.slurm_account,
        state="COMPLETED",
        exit_code=0,
        started_at=started,
        ended_at=started + timedelta(seconds=1),
        elapsed_seconds=1,
        gpus=1,
        cpus=1,
        ingested_at=timezone.now(),
    )


def ingested() -> None:
    """What an ingest cycle writes besides the records: the cluster's mark."""
    now = timezone.now()
    AccountingCursor.objects.update_or_create(cluster="lab", defaults={"ingested_until": now, "last_success_at": now})


def test_the_report_the_worker_kept_after_an_ingest_is_what_the_page_shows_without_computing_it(
    client, instructor, course
):
    record(course, 1)
    ingested()
    course_reports_refresh(accounts={"cs101", "other"})  # what the ingest task does after copying the records
    client.force_login(instructor)

    with CaptureQueriesContext(connection) as queries:
        first = client.get(REPORT)
    assert len(queries) == REPORT_PAGE_AGAIN_QUERIES, "read, not computed"
    assert first.context["report"].total.jobs == 1 and not first.context["report"].updating

    record(course, 2)
    ingested()
    course_reports_refresh(accounts={"cs101"})  # the next cycle's
    with CaptureQueriesContext(connection) as queries:
        second = client.get(REPORT)
    assert len(queries) == REPORT_PAGE_AGAIN_QUERIES and second.context["report"].total.jobs == 2


def test_a_course_the_ingest_brought_no_records_for_is_computed_on_its_first_view(client, instructor, course):
    record(course, 1)
    ingested()
    course_reports_refresh(accounts={"other"})
    client.force_login(instructor)

    with CaptureQueriesContext(connection) as queries:
        page = client.get(REPORT)

    assert len(queries) == REPORT_PAGE_QUERIES and page.context["report"].total.jobs == 1


def test_while_the_worker_computes_a_changed_report_the_page_shows_the_last_one_and_says_newer_figures_come(
    client, instructor, course, monkeypatch
):
    record(course, 1)
    ingested()
    client.force_login(instructor)
    before = client.get(REPORT)
    record(course, 2)
    ingested()
    seen = {}
    computed = kept_reports.course_report

    def opened_meanwhile(**arguments):
        seen["page"] = client.get(REPORT)  # a person opens the page while the worker computes the report
        return computed(**arguments)

    monkeypatch.setattr(kept_reports, "course_report", opened_meanwhile)
    course_reports_refresh(accounts={"cs101"})  # the worker, after the ingest
    monkeypatch.undo()

    meanwhile = seen["page"]
    assert meanwhile.context["report"].total.jobs == 1 and meanwhile.context["report"].updating
    as_of = timezone.localtime(before.context["report"].computed_at).strftime("%Y-%m-%d %H:%M:%S")
    assert f"Figures as of {as_of}. The course's jobs or accounting changed since: {UPDATING}." in meanwhile.text
    after = client.get(REPORT)
    assert after.context["report"].total.jobs == 2 and UPDATING not in after.text
    assert after.context["report"].computed_at > before.context["report"].computed_at


def test_after_a_change_the_next_view_computes_the_report_again_when_no_one_else_is(client, instructor, course):
    record(course, 1)
    ingested()
    client.force_login(instructor)
    assert client.get(REPORT).context["report"].total.jobs == 1
    record(course, 2)
    ingested()

    again = client.get(REPORT)

    assert again.context["report"].total.jobs == 2 and UPDATING not in again.text
    statement = client.get(reverse("reports:course-statement", args=["cs101"]))
    assert statement.context["report"].total.jobs == 2 and "Figures as of" in statement.text


def test_forgetting_a_person_drops_the_kept_reports_that_name_them(client, instructor, course):
    make_user("student9", "student9")  # they left the course: no roster change when they are forgotten
    record(course, 1, user="student9")
    ingested()
    course_reports_refresh(accounts={"cs101"})
    client.force_login(instructor)
    assert "student9" in str(table_rows(client.get(REPORT).text, "usage-students")).lower()

    person_forget(netid="student9")

    students = str(table_rows(client.get(REPORT).text, "usage-students"))
    assert "student9" not in students.lower() and pseudonym("student9") in students


def test_the_pages_body_is_drawn_once_for_each_computed_report_and_again_for_the_next(client, instructor, course):
    record(course, 1)
    ingested()
    client.force_login(instructor)

    def drawn(page) -> bool:
        return "reports/_usage_table.html" in [template.name for template in page.templates]

    first, again = client.get(REPORT), client.get(REPORT)
    assert drawn(first) and not drawn(again)
    assert table_rows(again.text, "usage-total") == table_rows(first.text, "usage-total")
    record(course, 2)
    ingested()
    changed = client.get(REPORT)
    assert drawn(changed) and table_rows(changed.text, "usage-total")[0][2] == "2"  # name, key, jobs
