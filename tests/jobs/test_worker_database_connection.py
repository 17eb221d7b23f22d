"""A submit worker keeps its database connection from one task to the next (CELERY_DB_REUSE_MAX,
portal/celery.py): a burst of submissions costs no new PostgreSQL connection per job. Celery's default
opened one per task, which cost the database more CPU than the submit task's own queries."""

import time

import pytest
from django.db import connection
from django.urls import reverse

from courses.models import Course
from jobs.models import Job, Status
from portal.celery import app
from tests.conftest import submit_form
from tests.http_helpers import celery_queue_clear
from tests.service_account import Portal, service_env, service_media, stop  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]

NAME = "labqueue-test-submit-worker"  # the worker's PostgreSQL application_name (libpq reads PGAPPNAME)


def worker_connections() -> list[tuple[int, object]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE application_name = %s AND datname = %s",
            [NAME, connection.settings_dict["NAME"]],
        )
        return cursor.fetchall()


def test_a_submit_worker_sends_eight_jobs_over_one_database_connection(client, settings, tmp_path, student, assignment):
    Course.objects.update(max_queued_jobs_per_student=10, max_running_jobs_per_student=10)
    celery_queue_clear()
    client.force_login(student)
    for _ in range(8):
        assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    portal = Portal(settings=settings, logs=tmp_path, env=service_env(settings))

    worker = portal.start_worker("submit", PGAPPNAME=NAME)
    try:
        deadline = time.monotonic() + 120
        while Job.objects.filter(status__in=[Status.QUEUED, Status.SUBMITTING]).exists():
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.5)
        connections = worker_connections()
    finally:
        stop(worker)

    jobs = list(Job.objects.all())
    assert len(jobs) == 8 and all(job.slurm_job_id for job in jobs), [job.message for job in jobs]
    assert len(connections) == 1, "one connection, kept after the last task"
    [(_, opened)] = connections
    assert opened < min(job.submitted_at for job in jobs), "opened before the first job was sent: all eight used it"


def test_after_a_task_fails_the_worker_drops_its_connection_and_the_next_task_opens_a_fresh_one(
    client, settings, tmp_path, student, assignment
):
    celery_queue_clear()
    client.force_login(student)
    portal = Portal(settings=settings, logs=tmp_path, env=service_env(settings))
    worker = portal.start_worker("submit", PGAPPNAME=NAME)
    try:
        first = sent(client, tmp_path)
        [(kept, _)] = worker_connections()
        app.send_task("jobs.tasks.job_dispatch", args=[10**9])  # no such job: the task raises
        wait_for_log(tmp_path, "raised unexpected: DoesNotExist")
        after_failure = closed_soon()  # the task logs its failure before task_postrun closes the connection
        second = sent(client, tmp_path)
        [(fresh, _)] = worker_connections()
    finally:
        stop(worker)

    assert first.slurm_job_id and second.slurm_job_id
    assert after_failure == [], "closed after the failed task"
    assert fresh != kept


def closed_soon() -> list[tuple[int, object]]:
    """The worker's connections once they are gone, or as they still are after ten seconds."""
    deadline = time.monotonic() + 10
    while (left := worker_connections()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def sent(client, logs) -> Job:
    """A job the student submits through the form, once the worker has sent it."""
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.latest("pk")
    deadline = time.monotonic() + 60
    while job.status in (Status.QUEUED, Status.SUBMITTING):
        assert time.monotonic() < deadline, (logs / "worker.log").read_text()[-3000:]
        time.sleep(0.2)
        job.refresh_from_db()
    return job


def wait_for_log(logs, text: str) -> None:
    deadline = time.monotonic() + 60
    while text not in (logs / "worker.log").read_text(errors="replace"):
        assert time.monotonic() < deadline, (logs / "worker.log").read_text()[-3000:]
        time.sleep(0.2)
