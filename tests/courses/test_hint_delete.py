"""Deleting a failure hint: the course's instructor only, by POST, and only the course's own hints."""

import pytest
from django.urls import reverse

from courses.models import Hint


@pytest.fixture
def hint(course) -> Hint:
    return Hint.objects.create(course=course, pattern="dataset not found", message="Pick a data set.")


def delete_url(hint: Hint, slug: str = "cs101") -> str:
    return reverse("courses:hint-delete", args=[slug, hint.pk])


def test_the_instructor_deletes_a_hint(client, instructor, hint):
    client.force_login(instructor)
    response = client.post(delete_url(hint), follow=True)
    assert response.redirect_chain == [(reverse("courses:hint-list", args=["cs101"]), 302)]
    assert "Hint deleted." in response.content.decode()
    assert not Hint.objects.filter(pk=hint.pk).exists()


@pytest.mark.parametrize(("persona", "status"), [("ta", 403), ("student", 403), ("outsider", 404), ("other_ta", 404)])
def test_nobody_else_may_delete_a_hint(client, request, hint, persona, status):
    client.force_login(request.getfixturevalue(persona))
    assert client.post(delete_url(hint)).status_code == status
    assert Hint.objects.filter(pk=hint.pk).exists()


def test_an_anonymous_visitor_is_sent_to_log_in_and_nothing_is_deleted(client, hint):
    response = client.post(delete_url(hint))
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))
    assert Hint.objects.filter(pk=hint.pk).exists()


def test_an_instructor_cannot_delete_another_courses_hint(client, instructor, other_course):
    foreign = Hint.objects.create(course=other_course, pattern="x", message="Another course's hint.")
    client.force_login(instructor)
    assert client.post(delete_url(foreign, "cs101")).status_code == 404, "not a hint of the instructor's course"
    assert client.post(delete_url(foreign, "cs102")).status_code == 404, "not a member of that course"
    assert Hint.objects.filter(pk=foreign.pk).exists()


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_a_hint_is_deleted_only_by_post(client, instructor, hint, method):
    client.force_login(instructor)
    assert getattr(client, method)(delete_url(hint)).status_code == 405
    assert Hint.objects.filter(pk=hint.pk).exists()
