"""slurmctld is stopped for real for 30 s while a job waits to be sent and the worker keeps retrying the send:
once the first send has met the outage, the job's label, polled through its live part, says that the portal
cannot reach the cluster and stays (it used to flip between "waiting to be sent" and "being sent" with each
retry)."""

import re
import threading
import time

import pytest
from django.db import connection
from django.urls import reverse

import slurm
from jobs import dispatch
from jobs.models import Status
from tests.faults.test_services_stop import stopped, submitted

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]

LABEL = re.compile(r'class="status status-[\w-]+">([^<]*)<')


def keep_sending(job_id: int, stop: threading.Event) -> None:
    """The dispatch task's retries, back to back (a shorter backoff than the worker's: more chances to flip)."""
    try:
        while not stop.is_set():
            try:
                dispatch.job_dispatch(job_id=job_id)
            except slurm.SlurmUnavailable:
                pass
            time.sleep(0.2)
    finally:
        connection.close()


def test_a_waiting_jobs_label_changes_at_most_once_in_30_seconds_of_controller_outage(client, student, assignment):
    job = submitted(client, student)
    labels = []
    with stopped("slurmctld"):
        with pytest.raises(slurm.SlurmUnavailable):
            dispatch.job_dispatch(job_id=job.pk)  # the first send meets the outage; the retries follow
        stop = threading.Event()
        sender = threading.Thread(target=keep_sending, args=(job.pk, stop))
        sender.start()
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                part = client.get(reverse("jobs:job-status", args=[job.uuid])).content.decode()
                labels.extend(LABEL.findall(part)[:1])
                time.sleep(0.25)
        finally:
            stop.set()
            sender.join()
    changes = sum(1 for before, after in zip(labels, labels[1:], strict=False) if before != after)
    assert changes <= 1, f"the label changed {changes} times: {sorted(set(labels))}"
    assert labels[-1] == "Not sent yet: the portal cannot reach the cluster"
    job.refresh_from_db()
    assert job.status == Status.QUEUED
