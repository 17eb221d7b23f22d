"""A submission the broker does not take (Redis down) is saved, marked for the sweep and explained on its page,
in the web process itself: no error for the student, and nothing for them to do."""

import logging
from collections.abc import Iterator

import pytest
from django.urls import reverse

from jobs.enqueue import SAVED_NOT_SENT, job_dispatch_enqueue
from jobs.models import Job, Status
from portal.celery import app
from portal.logs import broker_outage
from tests.conftest import job_row, submitted
from tests.http_helpers import celery_queue_clear, queued_tasks
from tests.service_account import free_port

pytestmark = pytest.mark.django_db(transaction=True)  # the task is sent when the transaction commits


def _fresh_connections() -> None:
    """Celery keeps a pool of broker connections for its URL; the next send takes the pool of the URL now set."""
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture(autouse=True)
def no_outage_yet() -> None:
    """This process has seen no broker outage (an earlier test's failed send may have begun one)."""
    broker_outage.end()


@pytest.fixture
def broker_not_answering() -> Iterator[None]:
    """This process's Celery app sends to a port where nothing listens, as when Redis is down."""
    url = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
    _fresh_connections()
    try:
        yield
    finally:
        app.conf.broker_url = url
        _fresh_connections()


@pytest.mark.usefixtures("broker_not_answering")
def test_a_submission_the_broker_does_not_take_is_saved_marked_and_explained_on_its_page(
    client, student, classmate, assignment, caplog
):
    waiting = job_row(classmate, assignment)  # a classmate's job, queued too: its page is not this one's
    with caplog.at_level(logging.ERROR, logger="jobs.enqueue"):
        job = submitted(client, student)

    job.refresh_from_db()
    assert job.status == Status.QUEUED and job.enqueue_failed, "the sweep sends it when the broker is back"
    assert job.message == SAVED_NOT_SENT
    page = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert page.status_code == 200
    assert "Your job is saved. The portal could not hand it to its worker just now" in page.content.decode()
    assert Job.objects.get(pk=waiting.pk).message == ""
    [logged] = [record.getMessage() for record in caplog.records if record.name == "jobs.enqueue"]
    assert logged.startswith(
        f"Could not send jobs.tasks.job_dispatch for job {job.pk} (the sweep sends it when the broker is back): "
    ), logged  # what the operator reads,
    assert "refused" in logged.lower(), logged  # then the broker's own error (nothing listens on its port)


@pytest.mark.usefixtures("broker_not_answering")
def test_a_job_cancelled_before_its_send_failed_is_not_told_it_will_be_sent(student, assignment):
    job = job_row(student, assignment, status=Status.CANCELLED)  # cancelled between the commit and the send

    job_dispatch_enqueue(job.pk)  # the submission's on-commit send, the broker not answering

    job.refresh_from_db()
    assert job.enqueue_failed and job.message == ""


def test_a_submission_the_broker_takes_is_sent_once_and_told_nothing_of_the_kind(client, student, assignment):
    celery_queue_clear()
    try:
        job = submitted(client, student)

        job.refresh_from_db()
        assert not job.enqueue_failed and job.message == ""
        assert queued_tasks() == [("jobs.tasks.job_dispatch", [job.pk], {})]
    finally:
        celery_queue_clear()


def test_a_burst_of_submissions_while_the_broker_is_down_is_one_error_then_one_line_when_it_answers(
    client, student, classmate, assignment, caplog
):
    """300 students submitting during an outage must not be 300 ERRORs for the operator: the first job not sent
    is the ERROR, the others are INFO lines naming their job, and the first send that goes through says so."""
    url = app.conf.broker_url
    with caplog.at_level(logging.INFO):
        app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
        _fresh_connections()
        try:
            first, second = submitted(client, student), submitted(client, classmate)
        finally:
            app.conf.broker_url = url
            _fresh_connections()
        celery_queue_clear()
        try:
            after = submitted(client, student)
        finally:
            celery_queue_clear()

    sends = [(record.levelname, record.getMessage()) for record in caplog.records if record.name == "jobs.enqueue"]
    assert [(level, message.split(" (")[0]) for level, message in sends] == [
        ("ERROR", f"Could not send jobs.tasks.job_dispatch for job {first.pk}"),
        ("INFO", f"Could not send jobs.tasks.job_dispatch for job {second.pk}"),
    ]
    back = [record.getMessage() for record in caplog.records if record.name == "portal.broker"]
    assert len(back) == 1 and back[0].startswith("The broker (Redis) answers again after"), back
    assert not Job.objects.get(pk=after.pk).enqueue_failed
