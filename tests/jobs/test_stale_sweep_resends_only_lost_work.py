"""The periodic sweep (the beat's jobs_sync task) re-sends work that was lost, and nothing else: it puts
back in the queue a job whose sending was interrupted long ago but leaves alone one a worker is sending
right now, sends a lost submit task once rather than on every sweep, and leaves finished jobs untouched.

No cluster: no job has a Slurm id, so the sync part of the task runs no Slurm command. The submit task a
commit would enqueue never fires in these tests (the test's transaction never commits): a lost task.
"""

from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, JobEvent, Status
from jobs.tasks import jobs_sync
from tests.behaviour_helpers import make_stale
from tests.conftest import submit_form
from tests.http_helpers import celery_queue_clear, queued_tasks


def submit(client) -> Job:
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    return Job.objects.latest("pk")


def test_the_sweep_requeues_a_long_interrupted_sending_and_leaves_one_in_progress_alone(client, student, assignment):
    client.force_login(student)
    interrupted, in_progress = submit(client), submit(client)
    Job.objects.filter(pk__in=[interrupted.pk, in_progress.pk]).update(
        status=Status.SUBMITTING, updated_at=timezone.now()
    )
    make_stale(interrupted)

    jobs_sync()

    interrupted.refresh_from_db()
    in_progress.refresh_from_db()
    assert interrupted.status == Status.QUEUED
    page = client.get(reverse("jobs:job-detail", args=[interrupted.uuid])).content.decode()
    assert "the submission was interrupted: the worker stopped while sending it); it will be sent again.</td>" in page
    assert interrupted.local_failures == 1
    assert in_progress.status == Status.SUBMITTING
    assert not JobEvent.objects.filter(job=in_progress, from_status=Status.SUBMITTING).exists()


def test_a_lost_submit_task_is_sent_again_once_not_on_every_sweep(client, student, assignment):
    client.force_login(student)
    job = submit(client)
    make_stale(job)
    celery_queue_clear()

    jobs_sync()
    jobs_sync()  # the next beat, while the re-sent task still waits for a worker

    assert queued_tasks() == [("jobs.tasks.job_dispatch", [job.pk], {})]
    celery_queue_clear()


def test_the_sweep_leaves_finished_jobs_alone(client, student, assignment):
    client.force_login(student)
    job = submit(client)
    Job.objects.filter(pk=job.pk).update(status=Status.COMPLETED, slurm_job_id="4545", ended_at=timezone.now())
    make_stale(job)
    before = Job.objects.get(pk=job.pk).updated_at
    celery_queue_clear()

    jobs_sync()

    assert queued_tasks() == []
    assert Job.objects.get(pk=job.pk).updated_at == before, "its page's live status has nothing new to show"
