"""TAs' failed-jobs view, notes to students, review marks, and paged logs."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job, Status
from tests.conftest import job_row


@pytest.fixture
def failures(client, student, classmate, assignment, course):
    """Three failed jobs, recorded as the sync records them."""
    other = Assignment.objects.create(course=course, slug="other", title="Other", script_template="true\n")
    rows = [(student, assignment, "timeout"), (student, other, "module-not-found"), (classmate, assignment, "timeout")]
    jobs = []
    for user, task, key in rows:
        jobs.append(
            job_row(
                user,
                task,
                status=Status.FAILED,
                explanation_key=key,
            )
        )
    job_row(
        student,
        assignment,
        status=Status.COMPLETED,
    )
    return jobs


def test_the_failed_jobs_view_lists_failures_with_counts_and_filters(client, ta, failures):
    client.force_login(ta)
    url = reverse("jobs:course-failures", args=["cs101"])
    page = client.get(url)
    assert page.status_code == 200
    assert len(page.context["jobs"]) == 3
    assert page.context["counts"] == [
        {"explanation_key": "timeout", "count": 2, "label": "The job ran out of time"},
        {"explanation_key": "module-not-found", "count": 1, "label": "A Python module is missing"},
    ]
    assert len(client.get(url + "?explanation=timeout").context["jobs"]) == 2
    assert len(client.get(url + "?assignment=other").context["jobs"]) == 1
    assert len(client.get(url + "?student=student2").context["jobs"]) == 1
    newest_first = [job.pk for job in page.context["jobs"]]
    assert newest_first == sorted(newest_first, reverse=True)


def test_students_get_403_and_another_courses_ta_404_on_the_failed_jobs_view(client, student, other_ta, failures):
    url = reverse("jobs:course-failures", args=["cs101"])
    client.force_login(student)
    assert client.get(url).status_code == 403
    client.force_login(other_ta)
    assert client.get(url).status_code == 404
    client.logout()
    assert client.get(url).status_code == 302


def test_a_ta_leaves_a_note_the_student_sees_and_marks_the_job_reviewed(client, ta, student, failures):
    job = failures[0]
    client.force_login(ta)
    client.post(reverse("jobs:job-note-create", args=[job.uuid]), {"text": "Ask for 20 minutes next time."})
    client.post(reverse("jobs:job-review", args=[job.uuid]))
    job.refresh_from_db()
    assert job.reviewed_by == ta and job.reviewed_at
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Ask for 20 minutes next time." in page
    assert "Add note" not in page


def test_students_cannot_write_notes_or_review(client, student, classmate, other_ta, failures):
    job = failures[0]
    client.force_login(student)
    assert client.post(reverse("jobs:job-note-create", args=[job.uuid]), {"text": "x"}).status_code == 403
    assert client.post(reverse("jobs:job-review", args=[job.uuid])).status_code == 403
    client.force_login(classmate)
    assert client.post(reverse("jobs:job-note-create", args=[job.uuid]), {"text": "x"}).status_code == 404
    client.force_login(other_ta)
    assert client.post(reverse("jobs:job-note-create", args=[job.uuid]), {"text": "x"}).status_code == 404
    assert not job.notes.exists()
    assert client.get(reverse("jobs:job-note-create", args=[job.uuid])).status_code == 405


def test_a_100_mb_log_does_not_slow_the_job_page_only_a_bounded_tail_is_read(client, student, failures, job_root):
    job = failures[0]
    workdir = Path(job_root) / "big"
    workdir.mkdir()
    with open(workdir / "job.out", "wb") as handle:
        handle.write(b"FIRST LINE\n")
        handle.truncate(100 * 1024 * 1024)
        handle.seek(0, os.SEEK_END)
        handle.write(b"\nTraceback (most recent call last):\nValueError: the last line\n")
    Job.objects.filter(pk=job.pk).update(workdir=str(workdir), submitted_at=job.created_at)
    client.force_login(student)
    response = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    page = response.content.decode()
    assert "ValueError: the last line" in page
    assert "FIRST LINE" not in page
    assert len(response.content) < 200_000
    assert "Showing the last part only" in page

    first = client.get(reverse("jobs:job-log", args=[job.uuid, "out"])).content.decode()
    assert "FIRST LINE" in first and "page 1 of 1601" in first
    last = client.get(reverse("jobs:job-log", args=[job.uuid, "out"]) + "?page=1601").content.decode()
    assert "ValueError: the last line" in last
