"""The submit form's one-time key: the same form sent again gives the job it already made, even when that job
used the last attempt or run the student may have; and a key is the student's own, so a key someone else sent
never hands them that person's job."""

import re
import threading
import time

import pytest
from django.db import connection, transaction
from django.urls import reverse

from courses.services import assignment_version_current
from jobs.models import Job
from tests.conftest import job_row, submit_form
from tests.jobs.test_status_compare_and_set import lock_waiters

pytestmark = pytest.mark.django_db

PAGE = "/courses/cs101/assignments/hello/"
SUBMIT = reverse("jobs:job-create", args=["cs101", "hello"])


def form_key(client) -> str:
    page = client.get(PAGE)
    assert page.status_code == 200
    return re.search(r'name="submission_key" value="([^"]+)"', page.content.decode()).group(1)


def send(client, key: str):
    return client.post(SUBMIT, {**submit_form(), "submission_key": key})


def test_the_same_form_sent_again_after_it_used_the_last_attempt_shows_that_job_not_a_refusal(
    client, student, assignment
):
    assignment.max_attempts = 1
    assignment.save()
    client.force_login(student)
    key = form_key(client)

    first, again = send(client, key), send(client, key)

    job = Job.objects.get()
    assert first.status_code == again.status_code == 302, again.content.decode()[-2000:]
    assert first["Location"] == again["Location"] == reverse("jobs:job-detail", args=[job.uuid])
    assert send(client, form_key(client)).status_code == 400, "a new form is refused: the one attempt is used"


def test_a_form_key_a_classmate_already_sent_gives_this_student_a_job_of_their_own(
    client, student, classmate, assignment
):
    client.force_login(student)
    key = form_key(client)
    assert send(client, key).status_code == 302
    theirs = Job.objects.get()

    client.force_login(classmate)
    answer = send(client, key)

    mine = Job.objects.exclude(pk=theirs.pk).get()
    assert answer.status_code == 302 and answer["Location"] == reverse("jobs:job-detail", args=[mine.uuid])
    assert mine.user == classmate and mine.run_as == "student2"
    assert Job.objects.get(pk=theirs.pk).user == student


@pytest.mark.django_db(transaction=True)
def test_the_same_form_whose_other_request_commits_first_shows_that_job(client, student, classmate, assignment):
    """Two requests of one form at once: both look for the key before either has committed. The one that
    commits second finds the key taken by the first (the unique index) and shows the first one's job, not
    the student's earlier job of another form, nor a classmate's that was sent with the same key."""
    assignment_version_current(assignment=assignment)  # as after the assignment's first job: no lock to take
    client.force_login(student)
    key = form_key(client)
    sent, other = threading.Event(), {}

    def other_request() -> None:  # holds its job uncommitted until this request waits on the index
        try:
            with transaction.atomic():
                other["job"] = job_row(student, assignment, submission_key=key)
                # Newer than it, so that a lookup by key alone or by student alone would find these first:
                other["decoys"] = [
                    job_row(classmate, assignment, submission_key=key),
                    job_row(student, assignment, submission_key="b" * 32),
                ]
                sent.set()
                deadline = time.monotonic() + 30
                while not lock_waiters():
                    assert time.monotonic() < deadline, "the second request never reached the unique index"
                    time.sleep(0.05)
        finally:
            connection.close()

    thread = threading.Thread(target=other_request)
    thread.start()
    assert sent.wait(30)
    answer = send(client, key)
    thread.join(30)

    assert answer.status_code == 302, answer.content.decode()[-2000:]
    assert answer["Location"] == reverse("jobs:job-detail", args=[other["job"].uuid])
    assert set(Job.objects.values_list("pk", flat=True)) == {other["job"].pk, *(job.pk for job in other["decoys"])}
