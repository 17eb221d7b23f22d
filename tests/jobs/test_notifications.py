"""A student is mailed once when a job ends the way they asked to hear about, through the real path: the
job is submitted over HTTP, a Celery worker (through Redis) sends it to the lab cluster, the sync records
that it failed, the worker's job_notify task mails a real SMTP server."""

import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.urls import reverse

from courses.models import Assignment
from jobs import notifications
from jobs.models import Job, JobNotification, NotificationPreference, Status
from jobs.tasks import job_notify
from portal.celery import app
from tests.concurrency import at_once
from tests.conftest import job_row, submit_form, wait_for_status
from tests.http_helpers import celery_queue_clear

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]

FAILING_SCRIPT = "echo starting\nexit 1\n"
SITE = "https://labqueue.cs.example.edu"


@pytest.fixture
def worker():
    """A Celery worker consuming this test's Redis queues (all three), in this process."""
    celery_queue_clear()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        yield


@pytest.fixture
def mailed_student(student):
    student.email = "student1@cs.example.edu"
    student.save(update_fields=["email"])
    return student


@pytest.fixture
def mailed_classmate(classmate):
    classmate.email = "student2@cs.example.edu"
    classmate.save(update_fields=["email"])
    return classmate


def wait_until(check, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def run_failing_job(client, user, course) -> Job:
    """Submit over HTTP; the worker sends the job to the lab cluster; sync (as beat would) until it ended."""
    Assignment.objects.create(course=course, slug="fails", title="Failing", script_template=FAILING_SCRIPT, gpus=0)
    client.force_login(user)
    response = client.post(reverse("jobs:job-create", args=["cs101", "fails"]), submit_form(gpus="0"))
    assert response.status_code == 302
    job = Job.objects.get(user=user)
    wait_until(lambda: Job.objects.get(pk=job.pk).status != Status.QUEUED)
    return wait_for_status(job, Status.FAILED, Status.COMPLETED, Status.REJECTED, timeout=180)


def tasks_done_up_to_now(smtp_server, classmate, course) -> None:
    """Wait until the worker has run every task sent so far: it takes the queue in order, so once a mail about
    a job of the classmate's, asked for now, has arrived, every earlier task has run."""
    marker = job_row(classmate, course.assignments.get(slug="fails"), status=Status.FAILED)
    before = len(smtp_server.to(classmate.email))
    job_notify.delay(marker.pk)
    wait_until(lambda: len(smtp_server.to(classmate.email)) > before, timeout=60)


def test_a_failed_job_mails_its_student_once_with_the_explanation_the_next_step_and_a_link(
    client,
    mailed_student,
    mailed_classmate,
    course,
    smtp_server,
    worker,
):
    job = run_failing_job(client, mailed_student, course)
    assert job.status == Status.FAILED

    [message] = smtp_server.wait_for(1)
    assert message["To"] == "student1@cs.example.edu"
    assert message["From"] == "LabQueue <labqueue@cs.example.edu>"
    assert message["Subject"].strip() == "LabQueue: your job failed: Failing · attempt 1"
    body = message.get_body().get_content()
    assert "Your script ended with an error" in body
    assert "Next step: Look at the end of the output and the errors below for the first thing that went wrong" in body
    link = f"{SITE}/jobs/{job.uuid}/"
    assert link in body
    assert "Your script ended with an error" in client.get(link.removeprefix(SITE)).content.decode()
    assert list(JobNotification.objects.filter(job=job).values_list("event", flat=True)) == ["failed"]

    job_notify.delay(job.pk)  # a replayed task, twice
    job_notify.delay(job.pk)
    tasks_done_up_to_now(smtp_server, mailed_classmate, course)
    job_notify.apply(args=[job.pk])  # and once more here, as a second worker would

    assert len(smtp_server.to("student1@cs.example.edu")) == 1
    assert JobNotification.objects.filter(job=job).count() == 1


def test_a_student_who_turned_failure_mail_off_gets_none(
    client,
    mailed_student,
    mailed_classmate,
    course,
    smtp_server,
    worker,
):
    client.force_login(mailed_student)
    response = client.post(reverse("jobs:notification-settings"), {"notify_refused": "on"})
    assert response.status_code == 302
    assert not NotificationPreference.objects.get(user=mailed_student).notify_failed

    job = run_failing_job(client, mailed_student, course)
    assert job.status == Status.FAILED
    tasks_done_up_to_now(smtp_server, mailed_classmate, course)

    assert smtp_server.to("student1@cs.example.edu") == []
    assert not JobNotification.objects.filter(job=job).exists()


def test_two_workers_mailing_about_the_same_job_at_once_send_one_mail(
    mailed_student,
    assignment,
    smtp_server,
):
    job = job_row(mailed_student, assignment, status=Status.FAILED, slurm_state="FAILED", exit_code=1)
    sent = at_once(lambda: notifications.job_notify(job_id=job.pk))

    assert sorted(sent) == [False, True]
    assert len(smtp_server.wait_for(1)) == 1
    assert JobNotification.objects.filter(job=job).count() == 1
