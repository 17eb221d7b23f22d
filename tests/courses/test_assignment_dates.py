"""An assignment's dates: opens-at and due-at set in the instructor's form, shown to students with the time left,
a submission before opening or after a refusing due date turned away with a clear message, a late one marked
late where the policy takes it, and a retry of a job handed in on time never late or refused."""

import html
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment, LatePolicy
from jobs.models import Job, Status
from tests.conftest import dispatch, submit_form, wait_for_status
from tests.courses.test_assignment_edit import edit_url, form_data


def page(client, url) -> str:
    return html.unescape(client.get(url).content.decode())


def submit(client, student):
    client.force_login(student)
    return client.post(reverse("jobs:assignment-detail", args=["cs101", "hello"]), submit_form())


def dates(assignment: Assignment, **fields) -> Assignment:
    Assignment.objects.filter(pk=assignment.pk).update(**fields)
    assignment.refresh_from_db()
    return assignment


def test_an_instructor_sets_the_dates_and_students_see_them_with_the_time_left(
    client, instructor, student, assignment, settings
):
    settings.TIME_ZONE = "UTC"
    due = (timezone.now() + timedelta(days=2, hours=3, minutes=30)).replace(second=0, microsecond=0)
    client.force_login(instructor)
    response = client.post(
        edit_url(),
        form_data(slug="hello", due_at=due.strftime("%Y-%m-%dT%H:%M"), late_policy="refuse", grace_minutes="15"),
    )
    assert response.status_code == 302, response.content.decode()
    assignment.refresh_from_db()
    assert (assignment.due_at, assignment.late_policy, assignment.grace_minutes) == (due, "refuse", 15)

    client.force_login(student)
    text = page(client, reverse("jobs:assignment-detail", args=["cs101", "hello"]))
    assert due.strftime("%Y-%m-%d %H:%M UTC") in text
    assert "Due in 2 days 3 h" in text
    assert "grace period 15 min" in text
    assert "Submissions are refused" in text
    course_page = page(client, reverse("courses:course-detail", args=["cs101"]))
    assert due.strftime("%Y-%m-%d %H:%M UTC") in course_page and "Due in 2 days 3 h" in course_page


def test_the_edit_form_refuses_a_due_date_before_the_opening(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(edit_url(), form_data(slug="hello", opens_at="2030-05-02T10:00", due_at="2030-05-01T10:00"))
    assert response.status_code == 200
    assert "The due date must come after the assignment opens." in page_text(response)
    assignment.refresh_from_db()
    assert assignment.due_at is None


def page_text(response) -> str:
    return html.unescape(response.content.decode())


def test_a_submission_before_the_assignment_opens_is_refused_with_the_opening_time(
    client, student, assignment, settings
):
    settings.TIME_ZONE = "UTC"
    opens = timezone.now() + timedelta(hours=5)
    dates(assignment, opens_at=opens)
    response = submit(client, student)
    assert response.status_code == 400
    assert f"This assignment opens on {opens.strftime('%Y-%m-%d %H:%M')} UTC" in page_text(response)
    assert not Job.objects.exists()


def test_after_a_refusing_due_date_a_submission_is_refused_and_nothing_is_lost(client, student, assignment):
    dates(assignment, due_at=timezone.now() - timedelta(hours=1), late_policy=LatePolicy.REFUSE)
    response = submit(client, student)
    assert response.status_code == 400
    text = page_text(response)
    assert "takes no late submissions, so the job was not submitted" in text
    assert 'value="run"' in text, "the student's values are still in the form"
    assert not Job.objects.exists()


def test_a_submission_within_the_grace_period_is_on_time(client, student, assignment):
    dates(assignment, due_at=timezone.now() - timedelta(minutes=5), grace_minutes=30, late_policy=LatePolicy.REFUSE)
    assert submit(client, student).status_code == 302
    assert Job.objects.get().late is False


def test_a_submission_after_the_due_date_is_marked_late_for_the_student_and_the_ta(client, student, ta, assignment):
    dates(assignment, due_at=timezone.now() - timedelta(minutes=5), late_policy=LatePolicy.MARK)
    assert submit(client, student).status_code == 302
    job = Job.objects.get()
    assert job.late is True
    assert "after the due date (late)" in page(client, reverse("jobs:job-detail", args=[job.uuid]))
    client.force_login(ta)
    assert '<strong class="late">late</strong>' in page(client, reverse("jobs:course-jobs", args=["cs101"]))


def test_a_submission_before_the_due_date_is_not_late(client, student, assignment):
    dates(assignment, due_at=timezone.now() + timedelta(hours=1))
    assert submit(client, student).status_code == 302
    job = Job.objects.get()
    assert job.late is False
    assert "(late)" not in page(client, reverse("jobs:job-detail", args=[job.uuid]))


def test_a_retry_after_the_due_date_of_a_job_handed_in_on_time_is_taken_and_not_late(client, student, assignment):
    assert submit(client, student).status_code == 302
    first = Job.objects.get()
    Job.objects.filter(pk=first.pk).update(status=Status.FAILED, slurm_state="TIMEOUT")
    dates(assignment, due_at=timezone.now() - timedelta(hours=1), late_policy=LatePolicy.REFUSE)
    response = client.post(reverse("jobs:job-retry", args=[first.uuid]), {"same": "1"})
    assert response.status_code == 302, page_text(response)
    assert Job.objects.get(retry_of=first).late is False


def test_a_retry_of_a_late_job_stays_late(client, student, assignment):
    dates(assignment, due_at=timezone.now() - timedelta(hours=1), late_policy=LatePolicy.MARK)
    assert submit(client, student).status_code == 302
    first = Job.objects.get()
    Job.objects.filter(pk=first.pk).update(status=Status.FAILED, slurm_state="TIMEOUT")
    assert client.post(reverse("jobs:job-retry", args=[first.uuid]), {"same": "1"}).status_code == 302
    assert Job.objects.get(retry_of=first).late is True


@pytest.mark.slurm
def test_a_late_job_runs_on_the_cluster_and_its_page_says_it_was_late(client, student, assignment):
    dates(assignment, due_at=timezone.now() - timedelta(minutes=1), late_policy=LatePolicy.MARK)
    assert submit(client, student).status_code == 302
    job = wait_for_status(dispatch(Job.objects.get()), Status.COMPLETED)
    assert job.late
    assert "after the due date (late)" in page(client, reverse("jobs:job-detail", args=[job.uuid]))


def test_the_tas_csv_of_the_course_jobs_says_which_were_late(client, student, ta, assignment):
    dates(assignment, due_at=timezone.now() - timedelta(minutes=5))
    assert submit(client, student).status_code == 302
    client.force_login(ta)
    response = client.get(reverse("jobs:course-jobs-csv", args=["cs101"]))
    header, row = b"".join(response.streaming_content).decode().splitlines()[:2]
    assert header.endswith(",gpus,late") and row.endswith(",late")
