"""Confirming a roster import applies exactly the previewed plan, and then asks the worker to sync Slurm.

The sync request is a real Celery message: the confirmation's on-commit callback runs and sends it to
the Redis broker, and the test reads it back from the queue.
"""

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Enrollment
from tests.http_helpers import celery_queue_clear, page_messages, queued_tasks

ROSTER_URL = reverse("courses:roster-import", args=["cs101"])
PREVIEWED = """netid,email,name,role
instructor1,instructor1@example.edu,Ada Instructor,instructor
student1,student1@example.edu,Sam Student,student
student4,student4@example.edu,Pat Newcomer,student
"""
CHANGED = PREVIEWED.replace("student4,student4@example.edu,Pat Newcomer,student", "student3,,Kim Other,ta")
REFUSED = "changed since the preview"


@pytest.fixture
def celery_queue():
    celery_queue_clear()
    yield
    celery_queue_clear()


def preview(client, text: str):
    response = client.post(ROSTER_URL, {"roster": SimpleUploadedFile("roster.csv", text.encode()), "preview": "1"})
    assert response.status_code == 200 and response.context["confirm"] is not None
    return response.context["confirm"].initial


def roles(course) -> dict[str, str]:
    return dict(Enrollment.objects.filter(course=course).values_list("user__netid", "role"))


def assert_refused(response, course, before: dict[str, str]) -> None:
    assert response.status_code == 200
    assert any(REFUSED in message for message in page_messages(response)), page_messages(response)
    assert roles(course) == before, "nothing applied"
    assert not get_user_model().objects.filter(netid__in=["student3", "student4"]).exists()


def test_a_confirmed_roster_is_applied_and_the_association_reconciliation_of_the_course_is_queued(
    client, course, instructor, student, classmate, celery_queue, django_capture_on_commit_callbacks
):
    client.force_login(instructor)
    shown = preview(client, PREVIEWED)
    assert queued_tasks() == [], "a preview asks for nothing"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(ROSTER_URL, {**shown, "confirm": "1"})
        assert queued_tasks() == [], "sent only once the transaction commits"
    assert response.status_code == 302
    assert roles(course) == {"instructor1": "instructor", "student1": "student", "student4": "student"}
    assert queued_tasks() == [
        ("clusterpolicy.tasks.associations_reconcile", [], {"course_id": course.pk, "trigger": "enrollment"})
    ]


def test_a_confirmation_with_another_plans_digest_is_refused(
    client, course, instructor, student, django_capture_on_commit_callbacks
):
    client.force_login(instructor)
    shown = preview(client, PREVIEWED)
    other = preview(client, CHANGED)
    before = roles(course)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(ROSTER_URL, {"csv_text": shown["csv_text"], "digest": other["digest"], "confirm": "1"})
    assert_refused(response, course, before)
    assert callbacks == [], "no Slurm sync asked for"


def test_a_confirmation_whose_roster_was_changed_after_the_preview_is_refused(
    client, course, instructor, student, django_capture_on_commit_callbacks
):
    client.force_login(instructor)
    shown = preview(client, PREVIEWED)
    before = roles(course)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(ROSTER_URL, {"csv_text": CHANGED, "digest": shown["digest"], "confirm": "1"})
    assert_refused(response, course, before)
    assert callbacks == []
    assert [row.netid for row in response.context["plan"].adds] == ["student3"], "the new plan is shown to check"


def test_a_file_uploaded_with_the_confirmation_is_not_what_gets_applied(client, course, instructor, student):
    client.force_login(instructor)
    shown = preview(client, PREVIEWED)
    changed_file = SimpleUploadedFile("roster.csv", CHANGED.encode())
    response = client.post(ROSTER_URL, {**shown, "roster": changed_file, "confirm": "1"})
    assert response.status_code == 302
    assert roles(course) == {"instructor1": "instructor", "student1": "student", "student4": "student"}
    assert not get_user_model().objects.filter(netid="student3").exists()


@pytest.mark.parametrize("digest", ["", "0" * 64, "f" * 65], ids=["missing", "forged", "too-long"])
def test_a_confirmation_with_a_missing_or_forged_digest_is_refused_with_a_message(
    client, course, instructor, student, digest, django_capture_on_commit_callbacks
):
    client.force_login(instructor)
    shown = preview(client, PREVIEWED)
    before = roles(course)
    data = {"csv_text": shown["csv_text"], "confirm": "1", **({"digest": digest} if digest else {})}
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(ROSTER_URL, data)
    assert_refused(response, course, before)
    assert callbacks == []


def test_a_confirmation_after_the_course_changed_is_refused(
    client, course, instructor, student, classmate, django_capture_on_commit_callbacks
):
    client.force_login(instructor)
    shown = preview(client, PREVIEWED)  # drops student2
    Enrollment.objects.filter(user=classmate).delete()  # another instructor dropped student2 meanwhile
    before = roles(course)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(ROSTER_URL, {**shown, "confirm": "1"})
    assert_refused(response, course, before)
    assert callbacks == []


def test_a_roster_that_only_changes_a_role_is_previewed_as_a_change_not_as_nothing_to_do(
    client, course, instructor, student
):
    promoted = PREVIEWED.replace(
        "student1,student1@example.edu,Sam Student,student", "student1,student1@example.edu,Sam Student,ta"
    ).replace("student4,student4@example.edu,Pat Newcomer,student\n", "")
    client.force_login(instructor)
    response = client.post(ROSTER_URL, {"roster": SimpleUploadedFile("roster.csv", promoted.encode()), "preview": "1"})

    plan = response.context["plan"]
    assert ([change.row.netid for change in plan.role_changes], plan.adds, plan.drops) == (["student1"], (), ())
    assert "nothing to change" not in response.content.decode()
