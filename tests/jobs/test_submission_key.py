"""The submit form's one-time key: the same form sent again gives the job it already made, even when that job
used the last attempt or run the student may have; and a key is the student's own, so a key someone else sent
never hands them that person's job."""

import re

import pytest
from django.urls import reverse

from jobs.models import Job
from tests.conftest import submit_form

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
