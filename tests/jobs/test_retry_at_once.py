"""Retry pressed twice at once (two requests overlapping, as a double click on a slow page can send): one new
attempt, and the request that loses the race opens the attempt the other one made."""

import threading
import time

import pytest
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from jobs.services import job_retry
from tests.conftest import submitted
from tests.jobs.test_status_compare_and_set import lock_waiters


@pytest.mark.django_db(transaction=True)
def test_retry_pressed_twice_at_once_makes_one_attempt_and_both_presses_open_it(client, student, assignment):
    job = submitted(client, student)
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_job_id="4242", ended_at=timezone.now())
    job.refresh_from_db()
    made, answered, first, errors = threading.Event(), threading.Event(), {}, []

    def first_press() -> None:  # holds its new attempt uncommitted until the second press waits on it
        try:
            with transaction.atomic():
                first["attempt"] = job_retry(job=Job.objects.get(pk=job.pk), actor=student)
                made.set()
                deadline = time.monotonic() + 30
                while not lock_waiters() and not answered.is_set():
                    assert time.monotonic() < deadline, "the second press neither waited nor answered"
                    time.sleep(0.05)
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=first_press)
    thread.start()
    assert made.wait(30)
    response = client.post(reverse("jobs:job-retry", args=[job.uuid]), {"same": "1"})
    answered.set()
    thread.join(30)

    assert not errors
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:job-detail", args=[first["attempt"].uuid])
    assert list(Job.objects.filter(retry_of=job)) == [first["attempt"]]
