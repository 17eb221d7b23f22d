"""A job's status changes only by compare-and-set: replayed or racing submit tasks send it to Slurm once."""

import threading

import pytest
from django.db import connection, transaction

from jobs.models import Job, JobEvent, Status
from jobs.tasks import job_dispatch
from tests.behaviour_helpers import slurm_cleanup, slurm_job_ids, wait_until
from tests.conftest import submitted

pytestmark = pytest.mark.slurm


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


def test_a_replayed_submit_task_for_a_pending_job_does_nothing(client, student, assignment):
    job = submitted(client, student)
    job_dispatch(job.pk)
    job.refresh_from_db()
    assert job.status == Status.PENDING
    events = list(JobEvent.objects.filter(job=job).values_list("pk", flat=True))

    job_dispatch(job.pk)  # the broker delivers the same task again

    replayed = Job.objects.get(pk=job.pk)
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "no second sbatch"
    assert replayed.slurm_job_id == job.slurm_job_id and replayed.submit_attempts == 1
    assert list(JobEvent.objects.filter(job=job).values_list("pk", flat=True)) == events, "no new history"


def lock_waiters() -> int:
    """Database sessions now waiting for a row lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # inside a transaction the view is read once otherwise
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_two_workers_dispatching_the_same_job_at_once_send_it_to_slurm_once(client, student, assignment):
    job = submitted(client, student)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            job_dispatch(job.pk)
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    # Hold the job's row: both tasks read it as QUEUED, then both wait to change it. When the lock goes,
    # they change it one after the other; only a compare-and-set makes the second one see it has moved.
    with transaction.atomic():
        Job.objects.select_for_update().get(pk=job.pk)
        for thread in threads:
            thread.start()
        wait_until(lambda: lock_waiters() >= 2, timeout=20, interval=0.1, what="both tasks to wait on the row")
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []

    job.refresh_from_db()
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "Slurm got the job once"
    assert job.status == Status.PENDING and job.submit_attempts == 1
    assert JobEvent.objects.filter(job=job, to_status=Status.SUBMITTING).count() == 1
    assert JobEvent.objects.filter(job=job, to_status=Status.PENDING).count() == 1
