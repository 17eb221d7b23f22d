"""The submit task's soft time limit cuts a sending that hangs short, and the job is sent again.

A controller that accepts and then says nothing, with a MessageTimeout far past the task's soft limit, keeps
the student's sbatch waiting. The limits travel with each task, set by the process that enqueues it (here the
web server the student submits through). At the soft limit the worker stops that sbatch (it runs as the
student, through sudo), counts the failure as the portal's and puts the job back in the queue; once the
cluster answers again the job runs exactly once.
"""

import pytest

from jobs.models import Job, Status
from portal.celery import app
from tests.behaviour_helpers import make_stale, slurm_conf_with, slurm_job_ids
from tests.conftest import submit_form
from tests.faults.conftest import sbatch_running_for, wait_for, wait_until
from tests.http_helpers import celery_queue_clear
from tests.service_account import running_portal, service_media, stop  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]

OUT_OF_TIME = (
    "Sending failed on the portal's side (the worker ran out of time while sending it); it will be sent again."
)


@pytest.mark.usefixtures("service_media")
def test_a_sending_that_outlasts_the_soft_time_limit_is_cut_short_and_the_job_is_sent_again_once(
    settings, tmp_path, student, assignment, job_root, silent_port
):
    # sbatch would wait 120 s for this controller's answer; the worker's own command limits are longer still.
    silent = slurm_conf_with(job_root / "silent-for-long", SlurmctldPort=silent_port, MessageTimeout=120)

    celery_queue_clear()
    with running_portal(settings, tmp_path, workers=0, LABQUEUE_TASK_SOFT_SECONDS="3") as portal:
        response = portal.submit(portal.browser_for(student), "cs101", "hello", submit_form())
        assert response.status_code == 302, response.text[:2000]
        job = Job.objects.get(user=student)
        worker = portal.start_worker(SLURM_CONF=silent, LABQUEUE_SLURM_TIMEOUT="200", LABQUEUE_JOBDIR_TIMEOUT="200")
        wait_until(lambda: sbatch_running_for(job), "the worker never reached sbatch")
        wait_until(lambda: job.events.filter(cause=OUT_OF_TIME).exists(), "the soft limit never cut the sending short")
        stop(worker)  # before its retry: the controller is still silent
        # sbatch would wait out its 120-second MessageTimeout; the worker stopped it, as the student, at once.
        wait_until(lambda: not sbatch_running_for(job), "the student's sbatch was left waiting", seconds=20)
        job.refresh_from_db()
        assert job.status == Status.QUEUED and job.local_failures == 1 and slurm_job_ids(job.slurm_name) == set()
        assert job.message == "The portal could not send your job yet; it will try again automatically."

        portal.start_worker()
        make_stale(job)  # the worker that held its retry is gone: the next sweep sends the job again
        sync = lambda: app.send_task("jobs.tasks.jobs_sync")  # noqa: E731 (one beat cycle)
        job = wait_for(job, Status.PENDING, Status.RUNNING, Status.COMPLETED, seconds=60, nudge=sync)
        job = wait_for(job, Status.COMPLETED, nudge=sync)

    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "exactly one Slurm job"
    assert Job.objects.get(pk=job.pk).message == ""
