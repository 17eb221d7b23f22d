"""A TA's note and review mark, through the job page's forms: each acts on the one job it was sent for, is
recorded in that job's history under the TA's name, and a note sent again by a double click is kept once (the
same TA, the same words, within a few seconds); any other note is kept."""

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from courses.models import Role
from jobs.models import Status
from jobs.services import NOTE_REPEAT_SECONDS
from tests.conftest import job_row, make_user
from tests.http_helpers import table_rows


def history(client, person, job) -> list[tuple[str, str]]:
    """The job page's history as its viewer reads it: (cause, who) per row."""
    client.force_login(person)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    return [(cause, who) for _at, cause, who in table_rows(page, "history")]


def test_a_note_is_in_the_job_s_history_under_the_ta_s_name(client, ta, student, assignment):
    job = job_row(student, assignment, status=Status.FAILED)
    client.force_login(ta)
    client.post(reverse("jobs:job-note-create", args=[job.uuid]), {"text": "Ask for 20 minutes next time."})

    assert ("Course staff added a note.", str(ta)) in history(client, student, job)


def test_the_same_note_sent_twice_in_a_row_is_kept_once_but_it_may_go_on_two_jobs(client, ta, student, assignment):
    job = job_row(student, assignment, status=Status.FAILED)
    other = job_row(student, assignment, status=Status.FAILED)
    client.force_login(ta)
    for target in (job, job, other):
        client.post(reverse("jobs:job-note-create", args=[target.uuid]), {"text": "Check the module name."})

    assert [note.text for note in job.notes.all()] == ["Check the module name."]
    assert [note.text for note in other.notes.all()] == ["Check the module name."]
    assert [cause for cause, _who in history(client, ta, job)].count("Course staff added a note.") == 1


def test_marking_one_job_reviewed_leaves_the_student_s_other_failures_unreviewed(client, ta, student, assignment):
    job = job_row(student, assignment, status=Status.FAILED)
    other = job_row(student, assignment, status=Status.FAILED)
    client.force_login(ta)
    client.post(reverse("jobs:job-review", args=[job.uuid]))

    job.refresh_from_db()
    other.refresh_from_db()
    assert (job.reviewed_by, other.reviewed_by, other.reviewed_at) == (ta, None, None)
    assert ("Marked as reviewed.", str(ta)) in history(client, student, job)
    assert "Marked as reviewed." not in [cause for cause, _who in history(client, student, other)]


def test_another_note_from_the_same_ta_another_ta_s_same_words_and_the_same_words_later_are_all_kept(
    client, ta, student, course, assignment
):
    job = job_row(student, assignment, status=Status.FAILED)
    second_ta = make_user("ta2", "ta2")
    course.enrollments.create(user=second_ta, role=Role.TA)
    url = reverse("jobs:job-note-create", args=[job.uuid])
    client.force_login(ta)
    client.post(url, {"text": "Check the module name."})
    client.post(url, {"text": "And ask for 20 minutes."})
    client.force_login(second_ta)
    client.post(url, {"text": "Check the module name."})
    job.notes.update(created_at=timezone.now() - timedelta(seconds=NOTE_REPEAT_SECONDS + 1))  # time has passed
    client.force_login(ta)
    client.post(url, {"text": "Check the module name."})

    assert [(note.author.username, note.text) for note in job.notes.order_by("pk")] == [
        ("ta1", "Check the module name."),
        ("ta1", "And ask for 20 minutes."),
        ("ta2", "Check the module name."),
        ("ta1", "Check the module name."),
    ]
