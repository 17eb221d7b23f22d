"""Who may open which report: staff read the course, students only their own usage."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from reports.models import UsageRecord
from tests.conftest import make_user

START = datetime(2026, 9, 2, 10, 0, tzinfo=UTC)
RANGE = "?first=2026-09-01&last=2026-09-30"


def record(user: str, account: str = "cs101", job_id: str = "1", gpus: int = 1, hours: int = 2) -> UsageRecord:
    return UsageRecord.objects.create(
        cluster="lab",
        slurm_job_id=job_id,
        submitted_at=START,
        user=user,
        account=account,
        state="COMPLETED",
        started_at=START,
        ended_at=START + timedelta(hours=hours),
        elapsed_seconds=hours * 3600,
        gpus=gpus,
        cpus=1,
        billing=3,
        ingested_at=START,
    )


def report_url(name: str = "reports:course-report", slug: str = "cs101") -> str:
    return reverse(name, args=[slug]) + RANGE


@pytest.mark.parametrize("name", ["reports:course-report", "reports:course-report-csv", "reports:course-statement"])
def test_course_staff_open_the_course_report_and_its_exports(client, ta, instructor, name):
    record("student1")
    for person in (ta, instructor):
        client.force_login(person)
        assert client.get(report_url(name)).status_code == 200


def test_a_ta_reads_the_report_without_any_form_that_changes_something(client, ta):
    client.force_login(ta)
    page = client.get(report_url()).content.decode()
    assert 'method="post"' not in page.replace('action="/accounts/logout/"', "").split("<main>")[1]


def test_anonymous_visitors_are_sent_to_log_in(client, course):
    response = client.get(report_url())
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize("name", ["reports:course-report", "reports:course-report-csv", "reports:course-statement"])
def test_students_cannot_open_the_course_report(client, student, name):
    client.force_login(student)
    assert client.get(report_url(name)).status_code == 403


def test_another_courses_ta_gets_404(client, course, other_ta):
    client.force_login(other_ta)
    assert client.get(report_url()).status_code == 404
    assert client.get(report_url("reports:my-usage")).status_code == 404


def test_the_report_only_answers_get(client, instructor):
    client.force_login(instructor)
    assert client.post(report_url()).status_code == 405


def test_a_student_sees_only_their_own_usage(client, student, classmate):
    record("student1", job_id="1", gpus=2, hours=3)
    record("student2", job_id="2", gpus=1, hours=5)
    client.force_login(student)
    page = client.get(report_url("reports:my-usage")).content.decode()
    assert "<td>6.000</td>" in page  # 2 GPUs x 3 hours
    assert "5.000" not in page and "student2" not in page


def test_the_course_page_links_the_report_for_staff_only(client, student, ta):
    detail = reverse("courses:course-detail", args=["cs101"])
    report_link = f'href="{reverse("reports:course-report", args=["cs101"])}"'
    client.force_login(ta)
    assert report_link in client.get(detail).content.decode()
    client.force_login(student)
    page = client.get(detail).content.decode()
    assert report_link not in page
    assert f'href="{reverse("reports:my-usage", args=["cs101"])}"' in page


def test_operations_staff_see_every_course_and_nobody_else_does(client, instructor, other_course):
    record("student1", account="cs101", gpus=2, hours=1)
    record("researcher1", account="research", job_id="9")
    client.force_login(instructor)
    assert client.get(reverse("reports:usage-overview") + RANGE).status_code == 403
    client.force_login(make_user("ops", None, is_staff=True))
    page = client.get(reverse("reports:usage-overview") + RANGE).content.decode()
    assert "CS101" in page and "CS102" in page and "research" in page and "2.000" in page


def test_usage_units_are_not_money_unless_a_rate_makes_an_estimate(client, instructor, settings):
    record("student1", hours=2)  # billing 3 x 2 hours = 6 usage units
    client.force_login(instructor)
    page = client.get(report_url("reports:course-statement")).content.decode()
    assert "6.000" in page and "No rate is configured" in page and "USD" not in page
    settings.LABQUEUE_BILLING_RATE = "0.50"
    page = client.get(report_url("reports:course-statement")).content.decode()
    assert "<strong>estimate</strong>" in page and "3.00" in page and "not an invoice" in page


def test_a_bad_range_is_explained_and_the_default_range_is_shown(client, instructor):
    client.force_login(instructor)
    response = client.get(reverse("reports:course-report", args=["cs101"]) + "?first=2026-09-30&last=2026-09-01")
    assert response.status_code == 200
    assert "The range ends before it starts." in response.content.decode()


def test_a_course_without_usage_is_estimated_at_nothing(client, instructor, settings):
    settings.LABQUEUE_BILLING_RATE = "100"
    client.force_login(instructor)
    page = client.get(report_url("reports:course-statement")).content.decode()
    assert "Estimate: 0.00" in page
