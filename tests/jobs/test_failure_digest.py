"""TAs' and instructors' daily failure digest: only to those who asked, only their own courses' failures, one a
day, each failure listed once. Mailed through a real SMTP server by the beat's task."""

from datetime import timedelta

from django.utils import timezone

from courses.models import Assignment, Role
from jobs.models import FailureDigest, NotificationPreference, Status
from jobs.notifications import failure_digests_send
from jobs.services import job_transition
from jobs.tasks import failure_digests_send as failure_digests_task
from tests.conftest import job_row

SITE = "https://labqueue.cs.example.edu"


def failed(user, assignment, status=Status.FAILED):
    """A job the sync (or the dispatch, for a refusal) has just recorded as ended badly."""
    job = job_row(user, assignment, status=Status.RUNNING if status == Status.FAILED else Status.SUBMITTING)
    assert job_transition(job=job, to=status, cause="Ended.", slurm_state="FAILED", exit_code=1)
    return job


def wants_digest(*people):
    for person in people:
        person.email = f"{person.username}@cs.example.edu"
        person.save(update_fields=["email"])
        NotificationPreference.objects.create(user=person, daily_digest=True)


def test_each_ta_who_asked_gets_one_mail_of_their_own_courses_failures(
    student,
    outsider,
    ta,
    other_ta,
    instructor,
    assignment,
    other_course,
    smtp_server,
):
    other_assignment = Assignment.objects.create(course=other_course, slug="other", title="Other lab", gpus=0)
    other_course.enrollments.create(user=ta, role=Role.STUDENT)  # a student there: not their failures to see
    wants_digest(ta, other_ta, student)
    instructor.email = "instructor1@cs.example.edu"
    instructor.save(update_fields=["email"])  # did not ask
    ours = failed(student, assignment)
    refused = failed(student, assignment, Status.REJECTED)
    theirs = failed(outsider, other_assignment)
    job_row(student, assignment, status=Status.COMPLETED)

    failure_digests_task.apply()

    assert sorted(message["To"] for message in smtp_server.wait_for(2)) == [
        "ta-other@cs.example.edu",
        "ta1@cs.example.edu",
    ]
    [to_ta] = smtp_server.to("ta1@cs.example.edu")
    assert to_ta["Subject"].strip() == "LabQueue: 2 new failed jobs in your courses"
    body = to_ta.get_body().get_content()
    assert "CS101 (Fall)" in body
    assert f"{SITE}/jobs/{ours.uuid}/" in body and f"{SITE}/jobs/{refused.uuid}/" in body
    assert "Student1 (student1): Hello GPU · attempt 1 (failed)" in body
    assert f"{SITE}/jobs/course/cs101/failed/" in body
    assert str(theirs.uuid) not in body and "CS102" not in body
    [to_other] = smtp_server.to("ta-other@cs.example.edu")
    other_body = to_other.get_body().get_content()
    assert str(theirs.uuid) in other_body
    assert str(ours.uuid) not in other_body and str(refused.uuid) not in other_body


def test_a_digest_goes_once_a_day_and_lists_each_failure_once(
    student,
    ta,
    assignment,
    smtp_server,
):
    wants_digest(ta)
    first = failed(student, assignment)
    assert failure_digests_send() == 1
    second = failed(student, assignment)

    assert failure_digests_send() == 0, "one digest a day"
    assert failure_digests_send(now=timezone.now() + timedelta(days=1)) == 1
    assert failure_digests_send(now=timezone.now() + timedelta(days=2)) == 0, "a day without failures: no mail"

    today, tomorrow = (message.get_body().get_content() for message in smtp_server.wait_for(2))
    assert str(first.uuid) in today and str(second.uuid) not in today
    assert str(second.uuid) in tomorrow and str(first.uuid) not in tomorrow
    assert list(FailureDigest.objects.order_by("day").values_list("failures", flat=True)) == [1, 1]
