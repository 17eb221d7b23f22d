"""The same note sent twice at once (a double click whose two requests overlap) is kept once: the second request
waits for the first on the job's row, then finds the note the first one added."""

import threading
import time

import pytest
from django.db import connection, transaction
from django.urls import reverse

from jobs.models import JobEvent, Status
from jobs.services import job_note_add
from tests.conftest import job_row
from tests.jobs.test_status_compare_and_set import lock_waiters

TEXT = "Check the module name."


@pytest.mark.django_db(transaction=True)
def test_the_same_note_sent_twice_at_once_is_kept_once(client, ta, student, assignment):
    job = job_row(student, assignment, status=Status.FAILED)
    added, answered, errors = threading.Event(), threading.Event(), []

    def first_request() -> None:  # holds its note uncommitted until the second request waits for the job's row
        try:
            with transaction.atomic():
                job_note_add(job=job, author=ta, text=TEXT)
                added.set()
                deadline = time.monotonic() + 30
                while not lock_waiters() and not answered.is_set():
                    assert time.monotonic() < deadline, "the second request neither waited nor answered"
                    time.sleep(0.05)
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=first_request)
    thread.start()
    assert added.wait(30)
    client.force_login(ta)
    response = client.post(reverse("jobs:job-note-create", args=[job.uuid]), {"text": TEXT})
    answered.set()
    thread.join(30)

    assert not errors
    assert response.status_code == 302
    assert [note.text for note in job.notes.all()] == [TEXT]
    assert JobEvent.objects.filter(job=job, cause="Course staff added a note.").count() == 1
