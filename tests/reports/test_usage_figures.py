"""The figures on "My usage" and on the operations overview: whose records and which account count, and a job
still running counts up to the moment the page is asked for."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment, Course, Role
from reports.models import UsageRecord
from reports.queries import Usage
from tests.conftest import job_row, make_user
from tests.http_helpers import table_rows

BAR = re.compile(r"<title>(\d{4}-\d\d-\d\d): ([\d.]+) GPU-hours</title>")


def record(user: str, job_id: str, *, account: str = "cs101", gpus: int = 1, hours: float = 1, **fields):
    """A record of a job that started `hours` before now and ended now, unless `fields` say otherwise."""
    now = timezone.now()
    values = {
        "cluster": "lab",
        "slurm_job_id": job_id,
        "submitted_at": now - timedelta(hours=hours),
        "started_at": now - timedelta(hours=hours),
        "ended_at": now,
        "user": user,
        "account": account,
        "state": "COMPLETED",
        "gpus": gpus,
        "cpus": 1,
        "billing": 1,
        "ingested_at": now,
    }
    return UsageRecord.objects.create(**{**values, **fields})


def since_yesterday(url: str) -> str:
    """Yesterday and today: a run of the last few hours lies inside whatever the time of day."""
    today = timezone.localdate()
    return f"{url}?first={today - timedelta(days=1)}&last={today}"


def page_of(client, person, url: str) -> str:
    client.force_login(person)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def my_usage(client, person) -> tuple[dict[str, str], list[list[str]], float]:
    """The total row by column name, the per-assignment rows, and the sum of the per-day bars."""
    response_html = page_of(client, person, since_yesterday(reverse("reports:my-usage", args=["cs101"])))
    client.logout()
    [total] = table_rows(response_html, "usage-total")
    bars = sum(float(hours) for _day, hours in BAR.findall(response_html))
    return dict(zip(Usage.HEADER, total, strict=True)), table_rows(response_html, "usage-assignments"), bars


def test_my_usage_counts_the_course_account_only_not_my_jobs_on_another_course_s(
    client, student, other_course, classmate
):
    record("student1", "1", gpus=2, hours=3)
    record("student1", "2", account="cs102", gpus=1, hours=5)  # the same person, another course's account
    record("student2", "3", gpus=4, hours=1)  # a classmate, this account

    total, _assignments, bars = my_usage(client, student)

    assert (total["Name"], total["Jobs"], total["GPU-hours"]) == ("You", "1", "6.000")
    assert bars == pytest.approx(6.0, abs=0.002)


def test_a_job_still_running_counts_up_to_now_in_my_total_my_assignment_and_my_days(client, student, assignment):
    job = job_row(student, assignment, slurm_job_id="7")
    record("student1", "7", hours=2, ended_at=None, state="RUNNING", job=job)

    total, assignments, bars = my_usage(client, student)

    assert total["Jobs"] == "1" and float(total["GPU-hours"]) == pytest.approx(2.0, abs=0.01)
    [row] = assignments
    assert row[:2] == ["Hello GPU", "hello"] and float(row[3]) == pytest.approx(2.0, abs=0.01)
    assert bars == pytest.approx(2.0, abs=0.01)


def test_the_overview_shows_each_course_s_own_account_figures_in_code_then_term_order(client, course):
    Course.objects.create(slug="cs100-spring", code="CS100", title="Intro", term="Spring", slurm_account="cs100s")
    Course.objects.create(slug="cs100-fall", code="CS100", title="Intro", term="Fall", slurm_account="cs100f")
    record("student1", "1", gpus=2, hours=3)
    record("student1", "2", account="cs100s", gpus=1, hours=1, ended_at=None, state="RUNNING")
    record("researcher1", "3", account="research", gpus=1, hours=5)
    operator = make_user("ops", None, is_staff=True)

    rows = table_rows(page_of(client, operator, since_yesterday(reverse("reports:usage-overview"))), "overview")

    figures = [(name, account, jobs, float(gpu_hours)) for name, account, jobs, gpu_hours, *_ in rows]
    assert [figure[:3] for figure in figures] == [
        ("CS100 (Fall)", "cs100f", "0"),
        ("CS100 (Spring)", "cs100s", "1"),
        ("CS101 (Fall)", "cs101", "1"),
        ("no course in the portal", "research", "1"),
    ]
    assert [figure[3] for figure in figures] == pytest.approx([0.0, 1.0, 6.0, 5.0], abs=0.01)


def test_the_overview_shows_gpu_hours_to_the_thousandth_and_a_failure_rate_only_where_jobs_finished(client, course):
    Course.objects.create(slug="cs100-fall", code="CS100", title="Intro", term="Fall", slurm_account="cs100f")
    record("student1", "1", gpus=2, hours=3)
    record("student1", "2", gpus=1, hours=1, state="FAILED")
    record("student1", "3", gpus=1, hours=1, state="FAILED")
    record("student1", "4", gpus=1, hours=1)
    record("student9", "5", account="cs100f", gpus=1, hours=1, ended_at=None, state="RUNNING")
    operator = make_user("ops", None, is_staff=True)

    rows = table_rows(page_of(client, operator, since_yesterday(reverse("reports:usage-overview"))), "overview")

    by_account = {
        account: (gpu_hours, failure_rate) for _name, account, _jobs, gpu_hours, _c, _u, failure_rate, _w in rows
    }
    assert by_account["cs101"] == ("9.000", "50%"), "6 + 1 + 1 + 1 GPU-hours; 2 of 4 finished jobs failed"
    assert by_account["cs100f"][1] == "", "a job still running has not failed: no rate yet"


def test_the_course_report_lists_each_student_of_the_course_with_their_own_figures_then_others_on_the_account(
    client, course, instructor, student, classmate, outsider
):
    no_netid = make_user("newcomer", netid=None)  # enrolled, without a cluster username yet
    course.enrollments.create(user=no_netid, role=Role.STUDENT)
    course.enrollments.create(user=make_user("quiet", netid="student9"), role=Role.STUDENT)  # no job yet
    record("student1", "1", gpus=2)
    record("researcher1", "2")  # on the course account, not a student of the course
    record("student3", "3", account="cs102")  # another course's student, on their own account
    record("student2", "4", hours=0.5, ended_at=None, state="RUNNING")  # counts up to now, not to the range's end

    page = page_of(client, instructor, since_yesterday(reverse("reports:course-report", args=["cs101"])))

    rows = table_rows(page, "usage-students")
    assert [row[:3] for row in rows] == [
        ["Student1", "student1", "1"],
        ["researcher1", "researcher1", "1"],
        ["researcher1: not a student of this course"],
        ["Student2", "student2", "1"],
        ["Newcomer", "", "0"],
        ["Quiet", "student9", "0"],
    ]
    assert [row[3] for row in rows if len(row) > 1] == ["2.000", "1.000", rows[3][3], "0.000", "0.000"]
    assert 0.5 <= float(rows[3][3]) < 0.52, "half an hour so far"
    assert rows[0][4:6] == ["1.000", "1.000"], "student1's CPU-hours and usage units: an hour on one CPU"
    quiet = dict(zip(Usage.HEADER, rows[-1], strict=True))
    assert (quiet["Success rate"], quiet["Attempts per success"]) == ("", ""), "no job: no rate, not 0%"
    assert re.findall(r'<span class="status">(\w+ \d+)</span>', page) == ["COMPLETED 2", "RUNNING 1"]
    [total] = table_rows(page, "usage-total")
    assert total[:3] == ["Total", "", "3"], "the account's jobs only"
    counts = ("Completed", "Failed", "Cancelled", "Running or waiting", "Success rate", "Attempts per success")
    assert [dict(zip(Usage.HEADER, total, strict=True))[name] for name in counts] == [
        "2",
        "0",
        "0",
        "1",
        "100%",
        "1.50",
    ]


def test_people_with_the_same_usage_are_listed_by_name_in_lower_case(client, course, instructor):
    record("res_b", "1")
    record("Res_a", "2")
    record("resa", "3")

    page = page_of(client, instructor, since_yesterday(reverse("reports:course-report", args=["cs101"])))

    names = [row[0] for row in table_rows(page, "usage-students") if len(row) > 1]
    assert names == ["Res_a", "res_b", "resa"], "as lower case sorts them: '_' before the letters"


def test_the_course_report_lists_usage_per_assignment_then_another_course_s_then_jobs_outside_the_portal(
    client, instructor, student, assignment, outsider, other_course
):
    record("student1", "1", gpus=2, job=job_row(student, assignment))
    foreign = Assignment.objects.create(course=other_course, slug="other", title="Elsewhere", script_template="true")
    record("student3", "2", gpus=1, hours=1.5, job=job_row(outsider, foreign))  # on cs101's account
    record("student1", "3", gpus=1)  # sbatch on a login node

    page = page_of(client, instructor, since_yesterday(reverse("reports:course-report", args=["cs101"])))

    assert [row[:4] for row in table_rows(page, "usage-assignments")] == [
        ["Hello GPU", "hello", "1", "2.000"],
        ["Elsewhere", "other", "1", "1.500"],
        ["Elsewhere: an assignment of another course"],
        ["Outside the portal", "", "1", "1.000"],
        ["Outside the portal: submitted with sbatch, not through LabQueue"],
    ]
    assert [row[:3] for row in table_rows(page, "usage-total")] == [["Total", "", "3"]]


def test_assignments_with_the_same_usage_are_listed_by_title_in_lower_case(client, instructor, student, course):
    for number, title in enumerate(["Lab_b", "lab_A", "Laba"]):
        lab = Assignment.objects.create(course=course, slug=f"lab{number}", title=title, script_template="true")
        record("student1", str(number), job=job_row(student, lab))

    page = page_of(client, instructor, since_yesterday(reverse("reports:course-report", args=["cs101"])))

    titles = [row[0] for row in table_rows(page, "usage-assignments") if len(row) > 1]
    assert titles == ["lab_A", "Lab_b", "Laba"], "as lower case sorts them: '_' before the letters"


def test_the_day_chart_adds_up_jobs_that_share_days_however_many_days_they_span(client, course, instructor):
    noon = timezone.make_aware(timezone.datetime(2026, 9, 1, 12, 0))  # local noon on the 1st
    runs = [
        ("1", 1, noon, noon + timedelta(days=3)),  # to noon on the 4th
        ("2", 2, noon + timedelta(days=1), noon + timedelta(days=3, hours=1)),  # from the 2nd, to 13:00 on the 4th
        ("3", 4, noon + timedelta(days=3, hours=1), noon + timedelta(days=3, hours=2)),  # an hour on the 4th
    ]
    for job_id, gpus, start, end in runs:
        record("u1", job_id, gpus=gpus, submitted_at=start, started_at=start, ended_at=end)

    url = reverse("reports:course-report", args=["cs101"]) + "?first=2026-09-01&last=2026-09-05"
    bars = dict(BAR.findall(page_of(client, instructor, url)))

    assert bars == {
        "2026-09-01": "12.000",  # 12 h x 1 GPU
        "2026-09-02": "48.000",  # 24 h x 1 + 12 h x 2
        "2026-09-03": "72.000",  # 24 h x 1 + 24 h x 2
        "2026-09-04": "42.000",  # 12 h x 1 + 13 h x 2 + 1 h x 4
        "2026-09-05": "0.000",
    }


def test_the_course_report_total_counts_each_outcome_once(client, course, instructor):
    for job_id, state in enumerate(["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "RUNNING", "PENDING"]):
        ended = {"ended_at": None} if state in ("RUNNING", "PENDING") else {}
        record("student1", str(job_id), state=state, **ended)

    page = page_of(client, instructor, since_yesterday(reverse("reports:course-report", args=["cs101"])))

    [total] = table_rows(page, "usage-total")
    counts = ("Jobs", "Completed", "Failed", "Cancelled", "Running or waiting", "Success rate")
    assert [dict(zip(Usage.HEADER, total, strict=True))[name] for name in counts] == ["6", "1", "2", "1", "2", "25%"]
