"""What /metrics reports: jobs by status from the database, Slurm commands counted across processes
through Redis, lags of the periodic work, and the Celery queue."""

import math

import pytest
from django.urls import reverse

import slurm
from jobs.models import Status
from jobs.tasks import jobs_sync
from slurm import runner
from tests.conftest import job_row, submit_form
from tests.http_helpers import celery_queue_clear
from tests.ops.metrics_helpers import TOKEN, scrape
from tests.service_account import as_service_account

pytestmark = pytest.mark.slurm


@pytest.fixture(autouse=True)
def metrics_token(settings) -> None:
    settings.LABQUEUE_METRICS_TOKEN = TOKEN


def test_jobs_are_counted_by_status_and_every_job_is_a_submission(client, student, classmate, assignment):
    job_row(student, assignment, status=Status.QUEUED)
    job_row(classmate, assignment, status=Status.QUEUED)
    job_row(student, assignment, status=Status.RUNNING)
    job_row(student, assignment, status=Status.FAILED)

    samples = scrape(client)

    assert samples[("labqueue_jobs", (("status", "queued"),))] == 2
    assert samples[("labqueue_jobs", (("status", "running"),))] == 1
    assert samples[("labqueue_jobs", (("status", "failed"),))] == 1
    assert samples[("labqueue_jobs", (("status", "completed"),))] == 0
    assert samples[("labqueue_job_submissions_total", ())] == 4


def test_a_submission_through_the_page_waits_in_the_celery_queue_until_a_worker_takes_it(
    client, student, assignment, django_capture_on_commit_callbacks
):
    celery_queue_clear()
    client.force_login(student)
    assert scrape(client)[("labqueue_celery_queue_length", ())] == 0

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    assert response.status_code == 302

    samples = scrape(client)
    assert samples[("labqueue_celery_queue_length", ())] == 1
    assert samples[("labqueue_jobs", (("status", "queued"),))] == 1
    celery_queue_clear()


def by_tool(samples: dict, name: str, tool: str) -> float:
    return samples.get((name, (("tool", tool),)), 0)


def test_slurm_commands_are_counted_by_tool_with_their_time_and_failures(client, db):
    before = scrape(client)

    slurm.queue()  # squeue through the adapter
    with pytest.raises(slurm.SlurmRejected):
        runner.run(["scontrol", "show", "job", "2147483000"])  # no such job: scontrol fails

    after = scrape(client)
    for name, tool, grew_by in (
        ("labqueue_slurm_command_seconds_count", "squeue", 1),
        ("labqueue_slurm_command_failures_total", "squeue", 0),
        ("labqueue_slurm_command_seconds_count", "scontrol", 1),
        ("labqueue_slurm_command_failures_total", "scontrol", 1),
    ):
        assert by_tool(after, name, tool) == by_tool(before, name, tool) + grew_by, (name, tool)
    squeue_seconds = "labqueue_slurm_command_seconds_sum"
    assert by_tool(after, squeue_seconds, "squeue") > by_tool(before, squeue_seconds, "squeue")


@pytest.mark.django_db(transaction=True)
def test_commands_the_worker_process_runs_are_seen_by_the_web_process(client, student, assignment, settings):
    """The job-status sync runs in another process, as the service account, as Celery's worker runs it."""
    job_row(student, assignment, status=Status.RUNNING, slurm_job_id="2147483000")  # no longer in Slurm
    squeue = ("labqueue_slurm_command_seconds_count", (("tool", "squeue"),))
    sacct = ("labqueue_slurm_command_seconds_count", (("tool", "sacct"),))
    before = scrape(client)

    result = as_service_account("from jobs.tasks import jobs_sync\njobs_sync()\n", settings)

    assert result.returncode == 0, result.stderr
    after = scrape(client)
    assert after[squeue] == before.get(squeue, 0) + 1
    assert after[sacct] == before.get(sacct, 0) + 1
    assert 0 <= after[("labqueue_job_sync_lag_seconds", ())] < 60


def test_periodic_work_that_never_ran_is_infinitely_behind(client, db):
    samples = scrape(client)

    assert samples[("labqueue_job_sync_lag_seconds", ())] == math.inf
    assert samples[("labqueue_usage_ingest_lag_seconds", ())] == math.inf
    assert samples[("labqueue_association_reconcile_age_seconds", ())] == math.inf

    jobs_sync()
    assert scrape(client)[("labqueue_job_sync_lag_seconds", ())] < 60
