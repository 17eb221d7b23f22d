"""A job the worker cannot send for a reason on the portal's side (its job directory's file system does not
answer in time) goes back to the queue to be sent again, and after LABQUEUE_DISPATCH_LOCAL_FAILURES tries is
refused with the reason, in words for the student and in the worker's log for the operators. Slurm never sees
it. Run in this process as the submit task runs it (tests/conftest.py `dispatch`)."""

import logging

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from jobs.workdir import WorkdirUnavailable
from tests.behaviour_helpers import slurm_job_ids
from tests.conftest import dispatch, submit_form

pytestmark = pytest.mark.slurm


def test_a_job_whose_directory_cannot_be_prepared_is_sent_again_then_refused_at_the_limit(
    client, student, assignment, settings, caplog
):
    settings.LABQUEUE_DISPATCH_LOCAL_FAILURES = 3
    settings.LABQUEUE_JOBDIR_TIMEOUT = 0.001  # the job directory's file system does not answer in time
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()

    for tries in (1, 2):
        with pytest.raises(WorkdirUnavailable, match="the job directory could not be prepared"):
            dispatch(job)  # the Celery task retries on this
        job.refresh_from_db()
        assert (job.status, job.local_failures, job.ended_at) == (Status.QUEUED, tries, None)
        assert job.message == "The portal could not send your job yet; it will try again automatically."
        cause = job.events.latest("pk").cause
        assert cause.startswith("Sending failed on the portal's side (the job directory could not be prepared:")
        assert cause.endswith("; it will be sent again.")

    with caplog.at_level(logging.ERROR, logger="jobs.dispatch"):
        job = dispatch(job)  # the third failure: refused, nothing left for the task to retry

    assert job.status == Status.REJECTED and job.local_failures == 3
    assert job.ended_at is not None
    assert job.message.startswith(
        "The portal tried 3 times to send your job to the cluster and failed each time "
        "(the job directory could not be prepared: "
    )
    assert job.message.endswith(
        "This is a fault on the portal's side, not in your job, and the operators can see it in the worker's log. "
        "Press Retry later; if it fails again, tell your TA."
    )
    assert job.events.latest("pk").cause.startswith("Refused after 3 failures on the portal's side; the last: ")
    assert job.explanation_key, "the refusal is explained on the job page"
    [record] = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert record.getMessage().startswith(
        f"Job {job.pk} refused after 3 local dispatch failures, the last: the job directory could not be prepared: "
    )
    assert slurm_job_ids(job.slurm_name) == set(), "Slurm never saw it"


def test_a_job_directory_helper_that_cannot_be_run_is_a_failure_on_the_portals_side_that_says_why(
    client, student, assignment, settings
):
    settings.LABQUEUE_JOBDIR_HELPER = "/nonexistent/labqueue-jobdir"  # a worker deployed without the helper
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()

    with pytest.raises(WorkdirUnavailable) as unavailable:
        dispatch(job)

    assert str(unavailable.value).startswith(
        "the job directory could not be prepared: sbatch could not be run on the worker: sudo: "
    )
    assert "command not found" in str(unavailable.value)
    job.refresh_from_db()
    assert (job.status, job.local_failures) == (Status.QUEUED, 1)
    assert job.events.latest("pk").cause.startswith(f"Sending failed on the portal's side ({unavailable.value}")
