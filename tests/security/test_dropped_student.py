"""A student dropped from a course (left out of the roster the instructor applies) can no longer submit or
retry in it, and course staff cannot retry on their behalf: every attempt over HTTP answers with a 403 page
saying why, and no job is made. Their earlier jobs stay readable."""

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Enrollment
from jobs.models import Job, Status
from tests.conftest import submit_form

ROSTER_URL = reverse("courses:roster-import", args=["cs101"])
ROSTER_WITHOUT_STUDENT1 = """netid,email,name,role
instructor1,instructor1@example.edu,Ada Instructor,instructor
ta1,ta1@example.edu,Tim Assistant,ta
"""


def drop_student1(client, instructor) -> None:
    """The instructor uploads a roster without student1 and confirms the previewed drop, as in the browser."""
    client.force_login(instructor)
    preview = client.post(
        ROSTER_URL, {"roster": SimpleUploadedFile("roster.csv", ROSTER_WITHOUT_STUDENT1.encode()), "preview": "1"}
    )
    assert [drop.netid for drop in preview.context["plan"].drops] == ["student1"]
    form = preview.context["confirm"]
    data = {"csv_text": form.initial["csv_text"], "digest": form.initial["digest"], "confirm": "1"}
    assert client.post(ROSTER_URL, data).status_code == 302


@pytest.fixture
def dropped(client, instructor, ta, student, assignment):
    """student1 submitted a job that failed, then was dropped from the course."""
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_state="FAILED", exit_code=1)
    drop_student1(client, instructor)
    assert not Enrollment.objects.filter(user=student).exists()
    job.refresh_from_db()
    return job


def refusal(response) -> str:
    assert response.status_code == 403
    return html.unescape(response.content.decode())


def test_a_dropped_student_cannot_submit_a_job_in_the_course(client, student, dropped):
    client.force_login(student)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    text = refusal(response)
    assert "You are no longer enrolled in this course, so you cannot submit jobs in it." in text
    assert "ask the course's instructor to add you to the roster again" in text
    assert Job.objects.count() == 1


def test_a_dropped_student_cannot_retry_their_failed_job(client, student, dropped):
    client.force_login(student)
    retry_url = reverse("jobs:job-retry", args=[dropped.uuid])
    for response in (client.post(retry_url, {"same": "1"}), client.get(retry_url)):
        text = refusal(response)
        assert "You are no longer enrolled in CS101 (Fall), so no new job can run for you in it." in text
    data = {"gpus": "1", "cpus": "1", "mem_mb": "500", "minutes": "10"}
    refusal(client.post(retry_url, data))
    assert Job.objects.count() == 1


def test_course_staff_cannot_retry_a_dropped_students_job_for_them(client, ta, instructor, dropped):
    for staff in (ta, instructor):
        client.force_login(staff)
        text = refusal(client.post(reverse("jobs:job-retry", args=[dropped.uuid]), {"same": "1"}))
        assert "Student1 is no longer enrolled in CS101 (Fall), so no new job can run for them in it." in text
    assert Job.objects.count() == 1


def test_a_dropped_student_still_reads_their_earlier_job(client, student, dropped):
    client.force_login(student)
    assert client.get(reverse("jobs:job-detail", args=[dropped.uuid])).status_code == 200


def test_someone_who_never_was_in_the_course_still_gets_404(client, outsider, assignment):
    client.force_login(outsider)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    assert response.status_code == 404
