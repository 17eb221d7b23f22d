"""Slurm's accounting daemon does not answer while jobs finish; two workers or two beats do the same
work at once; beat is started twice by mistake. Nothing is reported finished or running that is not,
nothing happens twice."""

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

import slurm
from jobs import dispatch
from jobs.models import Job, JobEvent, Status
from reports.ingest import usage_ingest
from reports.models import UsageRecord
from slurm import states
from tests.behaviour_helpers import make_stale, slurm_conf_with, slurm_job_ids, usage_caught_up
from tests.conftest import submit_form
from tests.faults.conftest import wait_until
from tests.http_helpers import celery_queue_clear
from tests.service_account import running_portal, service_media, service_process  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slurm


def accounting_unreachable(folder: Path) -> str:
    """A slurm.conf whose slurmdbd port nobody listens on: squeue answers, sacct cannot."""
    return slurm_conf_with(folder, AccountingStoragePort=1)


def left_the_queue(job: Job, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while (entry := slurm.queue().get(job.slurm_job_id)) is not None and states.is_live(entry.state):
        assert time.monotonic() < deadline, "the job never left the queue"
        time.sleep(0.5)


def sent_and_finished(client, student) -> Job:
    """A job the student submits through the form, sent by the worker's dispatch, once it has left the queue."""
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    dispatch.job_dispatch(job_id=job.pk)
    job.refresh_from_db()
    left_the_queue(job)
    return job


def test_a_job_that_finishes_while_accounting_is_down_is_neither_running_nor_done_until_it_answers(
    client, student, assignment, job_root, monkeypatch
):
    job = sent_and_finished(client, student)
    checked_before = job.checked_at

    monkeypatch.setenv("SLURM_CONF", accounting_unreachable(job_root / "no-accounting"))
    with pytest.raises(slurm.SlurmUnavailable):
        dispatch.jobs_sync()
    with pytest.raises(slurm.SlurmUnavailable):
        usage_ingest()

    job.refresh_from_db()
    assert job.status == Status.PENDING and job.left_queue_at is not None
    assert job.checked_at == checked_before, "not marked as checked: Slurm did not say how it ended"
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Your job has left the cluster&#x27;s queue: it has finished or was stopped." in page
    assert "waiting for the cluster&#x27;s accounting to confirm how it ended" in page

    monkeypatch.delenv("SLURM_CONF")
    answered_from = timezone.now()
    dispatch.jobs_sync()
    usage_caught_up(job)

    job.refresh_from_db()
    assert job.status == Status.COMPLETED and job.exit_code == 0
    assert job.checked_at >= answered_from, "checked: Slurm's accounting said how it ended"
    assert UsageRecord.objects.filter(slurm_job_id=job.slurm_job_id).count() == 1
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Your job finished successfully." in page


def accounting_state(job: Job) -> str | None:
    record = slurm.accounting(job_ids=[job.slurm_job_id]).get(job.slurm_job_id)
    return record.state if record else None


@contextmanager
def accounting_still_running(job_id: str):
    """slurmdbd's row for the job as it stands before the job's end reaches it (slurmctld sends the end
    later; a slurmdbd that lags or lost it keeps calling the job RUNNING): sacct says RUNNING with no end.
    The row is put back as it was afterwards."""

    def sql(statement: str) -> str:
        return subprocess.run(
            ["mariadb", "-N", "-B", "slurm_acct_db", "-e", statement], check=True, capture_output=True, text=True
        ).stdout

    job = int(job_id)
    where = f"WHERE id_job = {job}"
    state, end = sql(f"SELECT state, time_end FROM lab_job_table {where}").split()
    # slurmdbd may write the job's row once more after sacct first shows its end (a late update from slurmctld):
    # a trigger keeps the row RUNNING with no end whatever slurmdbd writes while the test runs.
    sql(
        "CREATE TRIGGER labqueue_test_still_running BEFORE UPDATE ON lab_job_table FOR EACH ROW "
        f"SET NEW.state = IF(NEW.id_job = {job}, 1, NEW.state), "  # 1: JOB_RUNNING in slurmdbd's tables
        f"NEW.time_end = IF(NEW.id_job = {job}, 0, NEW.time_end)"
    )
    try:
        sql(f"UPDATE lab_job_table SET state = 1, time_end = 0 {where}")
        yield
    finally:
        sql("DROP TRIGGER labqueue_test_still_running")
        sql(f"UPDATE lab_job_table SET state = {int(state)}, time_end = {int(end)} {where}")


def test_a_job_gone_from_the_queue_that_accounting_still_calls_running_waits_for_its_end(
    client, student, assignment, job_root
):
    job = sent_and_finished(client, student)
    wait_until(lambda: accounting_state(job) == "COMPLETED", "the job's end reached accounting")

    with accounting_still_running(job.slurm_job_id):
        assert accounting_state(job) == "RUNNING"
        dispatch.jobs_sync()

        job.refresh_from_db()
        assert job.status == Status.PENDING and job.left_queue_at is not None and job.ended_at is None
        page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
        assert "waiting for the cluster&#x27;s accounting to confirm how it ended" in page

    dispatch.jobs_sync()
    job.refresh_from_db()
    assert job.status == Status.COMPLETED and job.exit_code == 0


def together(code: str, settings, copies: int = 2) -> None:
    """Run the same portal code in `copies` processes as the service account, started together."""
    processes = [service_process(code, settings) for _ in range(copies)]
    for process in processes:
        _, errors = process.communicate(timeout=120)
        assert process.returncode == 0, errors


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("service_media")
def test_two_workers_sending_the_same_job_at_once_submit_it_once(client, student, assignment, settings):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()

    together(f"from jobs.dispatch import job_dispatch\njob_dispatch(job_id={job.pk})\n", settings)

    job.refresh_from_db()
    assert job.status == Status.PENDING and job.submit_attempts == 1
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}
    assert JobEvent.objects.filter(job=job, to_status=Status.SUBMITTING).count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("service_media")
def test_two_beats_syncing_at_once_finish_a_job_once(client, student, assignment, settings):
    job = sent_and_finished(client, student)

    together("from jobs.tasks import jobs_sync\njobs_sync()\n", settings, copies=3)

    job.refresh_from_db()
    assert job.status == Status.COMPLETED
    assert JobEvent.objects.filter(job=job, to_status=Status.COMPLETED).count() == 1
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("service_media")
def test_beat_started_twice_by_mistake_sends_each_lost_job_once_and_finishes_it_once(
    settings, tmp_path, student, assignment
):
    """Two beats send every periodic task twice: two syncs at a time, and two sweeps that both find the
    jobs whose submit tasks were lost. Each job is still sent once and finished once."""
    celery_queue_clear()
    with running_portal(settings, tmp_path, workers=0, LABQUEUE_SYNC_SECONDS="1") as portal:
        browser = portal.browser_for(student)
        data = {key: value for key, value in submit_form().items() if key != "uploads"}
        for _ in range(3):
            assert portal.submit(browser, "cs101", "hello", data).status_code == 302
        celery_queue_clear()  # the submit tasks are lost (a broker restarted without its data)
        for job in Job.objects.all():
            make_stale(job)
        portal.start_beat("beat")
        portal.start_beat("second-beat")
        portal.start_worker()
        wait_until(
            lambda: Job.objects.filter(status=Status.COMPLETED).count() == 3,
            f"jobs: {list(Job.objects.values_list('status', flat=True))}",
            seconds=180,
        )

        for name in ("beat", "second-beat"):
            sent = (tmp_path / f"{name}.log").read_text().count("Sending due task jobs-sync")
            assert sent >= 2, f"{name} sent the sync {sent} times"
    for job in Job.objects.all():
        assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "sent once"
        assert job.submit_attempts == 1
        assert JobEvent.objects.filter(job=job, to_status=Status.SUBMITTING).count() == 1
        assert JobEvent.objects.filter(job=job, to_status=Status.COMPLETED).count() == 1
