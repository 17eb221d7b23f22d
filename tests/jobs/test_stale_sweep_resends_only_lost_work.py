"""The periodic sweep (the beat's jobs_sync task) re-sends work that was lost, and nothing else: it puts
back in the queue a job whose sending was interrupted long ago but leaves alone one a worker is sending
right now, sends a lost submit task once rather than on every sweep, and leaves finished jobs untouched.

No cluster: no job has a Slurm id, so the sync part of the task runs no Slurm command. The submit task a
commit would enqueue never fires in these tests (the test's transaction never commits): a lost task.
"""

import os
import pwd
import signal
import socket
import subprocess
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, JobEvent, Status
from jobs.tasks import jobs_sync
from tests.behaviour_helpers import make_stale
from tests.conftest import submit_form
from tests.http_helpers import celery_queue_clear, queued_tasks
from tests.service_account import SERVICE_ACCOUNT


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


def sending_since(client, owner: str, settings) -> Job:
    """A job a worker process (`owner`, "host:pid") started sending longer ago than the limit of the call that
    prepares and submits it (LABQUEUE_JOBDIR_TIMEOUT), but not as long ago as LABQUEUE_RESUBMIT_AFTER_SECONDS."""
    job = submit(client)
    since = timezone.now() - timedelta(seconds=settings.LABQUEUE_JOBDIR_TIMEOUT + 5)
    Job.objects.filter(pk=job.pk).update(status=Status.SUBMITTING, dispatch_owner=owner, updated_at=since)
    return job


def ended_process() -> int:
    """The pid of a process that has exited (and been reaped)."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_the_sweep_resends_at_once_a_job_whose_sending_process_died_on_this_host_and_only_that_one(
    client, student, assignment, settings
):
    settings.LABQUEUE_RESUBMIT_AFTER_SECONDS = 3600
    client.force_login(student)
    host = socket.gethostname()
    died = sending_since(client, f"{host}:{ended_process()}", settings)
    # A live sender: a process that any signal but the harmless probe (0) would end.
    sender = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    alive = sending_since(client, f"{host}:{sender.pid}", settings)
    elsewhere = sending_since(client, f"another-host:{ended_process()}", settings)
    unreadable = sending_since(client, f"{host}:not-a-pid", settings)
    just_now = sending_since(client, f"{host}:{ended_process()}", settings)
    # Its sender died a moment ago: the sbatch it started may still be running, so not before LABQUEUE_JOBDIR_TIMEOUT.
    Job.objects.filter(pk=just_now.pk).update(updated_at=timezone.now())
    celery_queue_clear()

    try:
        jobs_sync()
        assert sender.poll() is None, "the sweep only asks whether the sender lives; it never signals it"
    finally:
        sender.kill()
        sender.wait()

    assert queued_tasks() == [("jobs.tasks.job_dispatch", [died.pk], {})]
    celery_queue_clear()
    statuses = dict(Job.objects.values_list("pk", "status"))
    assert statuses[died.pk] == Status.QUEUED
    assert Job.objects.get(pk=died.pk).local_failures == 1
    for job in (alive, elsewhere, unreadable, just_now):
        assert statuses[job.pk] == Status.SUBMITTING, "its sender may still be at work: wait for the usual delay"


def test_a_sending_process_of_another_account_counts_as_alive(client, student, assignment, settings):
    """The worker runs as the service account: a process it may not signal (EPERM) exists."""
    settings.LABQUEUE_RESUBMIT_AFTER_SECONDS = 3600
    client.force_login(student)
    job = sending_since(client, f"{socket.gethostname()}:1", settings)  # init, root's
    celery_queue_clear()

    account = pwd.getpwnam(SERVICE_ACCOUNT)
    # Real and effective uid the service account's (the kernel checks the real one before a signal), the saved
    # one root's, to come back.
    os.setresuid(account.pw_uid, account.pw_uid, 0)
    try:
        jobs_sync()
    finally:
        os.setresuid(0, 0, 0)

    assert queued_tasks() == []
    assert Job.objects.get(pk=job.pk).status == Status.SUBMITTING


def test_a_job_whose_submit_task_the_broker_refused_is_sent_at_the_next_sweep_once(client, student, assignment):
    client.force_login(student)
    refused = submit(client)
    submit(client)  # a recent job whose task went out: not sent again
    Job.objects.filter(pk=refused.pk).update(enqueue_failed=True)  # jobs.enqueue marks it when the send fails
    celery_queue_clear()

    jobs_sync()
    jobs_sync()  # the next beat: sent once, not again

    assert queued_tasks() == [("jobs.tasks.job_dispatch", [refused.pk], {})], "a recent job whose task went out waits"
    assert not Job.objects.get(pk=refused.pk).enqueue_failed
    celery_queue_clear()


def test_a_cancel_the_broker_refused_is_sent_at_the_next_sweep_once_and_only_for_a_job_still_in_slurm(
    client, student, assignment, settings, tmp_path
):
    settings.SLURM_BIN_DIR = str(tmp_path)  # Slurm does not answer meanwhile: the sweep runs all the same
    client.force_login(student)
    lost, sent, ended, unasked = (submit(client) for _ in range(4))
    Job.objects.filter(pk__in=[lost.pk, sent.pk, ended.pk, unasked.pk]).update(
        status=Status.RUNNING, slurm_job_id="4545", cancel_requested=True, enqueue_failed=True
    )
    Job.objects.filter(pk=sent.pk).update(enqueue_failed=False)  # its scancel task went out
    Job.objects.filter(pk=ended.pk).update(status=Status.CANCELLED, ended_at=timezone.now())
    Job.objects.filter(pk=unasked.pk).update(cancel_requested=False)  # a failed submit send, not a cancel
    celery_queue_clear()

    jobs_sync()
    jobs_sync()

    assert queued_tasks() == [("jobs.tasks.job_scancel", [lost.pk], {})]
    assert not Job.objects.get(pk=lost.pk).enqueue_failed
    celery_queue_clear()
