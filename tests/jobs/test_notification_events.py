"""A refused job mails its student: the refusal enqueues job_notify once the status change commits, and the
task mails a real SMTP server what happened, why and what to do."""

from django.urls import reverse

from jobs.lifecycle import job_transition
from jobs.models import Job, NotificationPreference, Status
from jobs.tasks import job_notify
from tests.conftest import dispatch, job_row, submit_form
from tests.http_helpers import celery_queue_clear, queued_tasks


def test_a_job_refused_because_its_student_left_the_course_mails_them_why(
    client,
    student,
    assignment,
    smtp_server,
    django_capture_on_commit_callbacks,
):
    student.email = "student1@cs.example.edu"
    student.save(update_fields=["email"])
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get()
    student.enrollments.all().delete()
    celery_queue_clear()

    with django_capture_on_commit_callbacks(execute=True):
        job = dispatch(job)

    assert job.status == Status.REJECTED
    assert queued_tasks() == [("jobs.tasks.job_notify", [job.pk], {})]
    job_notify.apply(args=[job.pk])  # what the worker does with it
    [message] = smtp_server.wait_for(1)
    assert message["Subject"].strip() == "LabQueue: your job was refused: Hello GPU · attempt 1"
    body = message.get_body().get_content()
    assert "no longer enrolled in CS101 (Fall)" in body
    assert f"/jobs/{job.uuid}/" in body


def test_a_completed_job_mails_only_who_asked_and_a_cancelled_one_queues_no_mail(
    student,
    classmate,
    assignment,
    smtp_server,
    django_capture_on_commit_callbacks,
):
    for person in (student, classmate):
        person.email = f"{person.username}@cs.example.edu"
        person.save(update_fields=["email"])
    NotificationPreference.objects.create(user=classmate, notify_finished=True)
    celery_queue_clear()
    quiet = job_row(student, assignment, status=Status.RUNNING)
    asked = job_row(classmate, assignment, status=Status.RUNNING)
    cancelled = job_row(student, assignment, status=Status.QUEUED)
    with django_capture_on_commit_callbacks(execute=True):
        assert job_transition(job=quiet, to=Status.COMPLETED, cause="Done.")
        assert job_transition(job=asked, to=Status.COMPLETED, cause="Done.")
        assert job_transition(job=cancelled, to=Status.CANCELLED, cause="Cancelled.")

    assert sorted(queued_tasks()) == [("jobs.tasks.job_notify", [job.pk], {}) for job in (quiet, asked)]
    for job in (quiet, asked):
        job_notify.apply(args=[job.pk])
    [message] = smtp_server.wait_for(1)
    assert message["To"] == "student2@cs.example.edu"
    assert message["Subject"].strip() == "LabQueue: your job finished: Hello GPU · attempt 1"
    assert smtp_server.to("student1@cs.example.edu") == []
