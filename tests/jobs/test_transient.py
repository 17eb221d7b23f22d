"""When Slurm does not answer, the job waits and says so; nothing is lost."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

import slurm
from jobs import dispatch
from jobs.models import Job, Status
from tests.behaviour_helpers import slurm_job_ids, unreachable_controller
from tests.conftest import submit_form, wait_for_status

pytestmark = pytest.mark.slurm


def test_an_unreachable_controller_keeps_the_job_queued_and_a_later_try_submits_it(
    client, student, assignment, job_root, monkeypatch
):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()

    monkeypatch.setenv("SLURM_CONF", unreachable_controller(job_root / "dead-controller"))
    with pytest.raises(slurm.SlurmUnavailable):
        dispatch.job_dispatch(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Status.QUEUED
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "The cluster is not answering right now" in page
    assert "will send it again automatically" in page

    monkeypatch.delenv("SLURM_CONF")
    dispatch.job_dispatch(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Status.PENDING
    assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "Slurm holds exactly one job of this name"
    assert job.message == "", "the cluster answered: the page no longer says it is not answering"
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "The cluster is not answering right now" not in page
    wait_for_status(job, Status.COMPLETED)


def test_a_sync_that_cannot_reach_slurm_keeps_the_last_known_state(client, student, assignment, job_root, monkeypatch):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    dispatch.job_dispatch(job_id=job.pk)
    monkeypatch.setenv("SLURM_CONF", unreachable_controller(job_root / "dead-controller"))
    with pytest.raises(slurm.SlurmUnavailable):
        dispatch.jobs_sync()
    job.refresh_from_db()
    assert job.status == Status.PENDING


def test_the_job_page_says_when_the_status_is_only_the_last_known(client, student, assignment, job_root, monkeypatch):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    dispatch.job_dispatch(job_id=job.pk)
    dispatch.jobs_sync()
    page = client.get(reverse("jobs:job-status", args=[job.uuid])).content.decode()
    assert "has not answered since" not in page

    monkeypatch.setenv("SLURM_CONF", unreachable_controller(job_root / "dead-controller"))
    Job.objects.filter(pk=job.pk).update(checked_at=timezone.now() - timedelta(minutes=5))
    with pytest.raises(slurm.SlurmUnavailable):
        dispatch.jobs_sync()
    page = client.get(reverse("jobs:job-status", args=[job.uuid])).content.decode()
    assert "The cluster has not answered since" in page and "Your job is not lost" in page
    monkeypatch.delenv("SLURM_CONF")
    wait_for_status(job, Status.COMPLETED)
