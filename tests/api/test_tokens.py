"""Personal access tokens: made on the settings page and shown once, stored as a digest, refused once revoked,
expired or unknown (401), and held to their scopes (403)."""

import hashlib
import re
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from api.models import PersonalToken
from tests.api.conftest import call, problem


def test_the_settings_page_shows_a_new_token_once_and_keeps_only_its_digest(client, student):
    client.force_login(student)
    response = client.post(reverse("api:token-settings"), {"name": "ci", "scopes": ["read:jobs"], "days": "30"})

    assert response.status_code == 200
    text = re.search(r"lqp_[A-Za-z0-9_-]{40,}", response.content.decode()).group(0)
    token = PersonalToken.objects.get()
    assert token.digest == hashlib.sha256(text.encode()).hexdigest()
    assert text not in str(PersonalToken.objects.values().get())
    assert response["Cache-Control"] == "no-store"
    assert text not in client.get(reverse("api:token-settings")).content.decode()
    assert call(client, "get", "/api/v1/jobs", text).status_code == 200


def test_the_settings_page_refuses_a_scope_not_on_the_list(client, student):
    client.force_login(student)
    response = client.post(reverse("api:token-settings"), {"name": "ci", "scopes": ["admin:all"], "days": "30"})

    assert response.status_code == 400
    assert "admin:all is not a scope." in response.content.decode()
    assert not PersonalToken.objects.exists()


def test_the_settings_page_needs_a_signed_in_person(client):
    response = client.get(reverse("api:token-settings"))

    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_the_header_links_to_the_tokens_page(client, student):
    client.force_login(student)

    assert reverse("api:token-settings") in client.get(reverse("jobs:job-list")).content.decode()


def test_a_revoked_token_is_refused_with_401_at_once(client, student, token_for):
    text = token_for(student)
    assert call(client, "get", "/api/v1/jobs", text).status_code == 200
    client.force_login(student)
    token = PersonalToken.objects.get()
    assert client.post(reverse("api:token-revoke", args=[token.uuid])).status_code == 302
    client.logout()

    response = call(client, "get", "/api/v1/jobs", text)

    assert response.status_code == 401
    assert "revoked" in problem(response)["detail"]


def test_someone_cannot_revoke_another_persons_token(client, student, classmate, token_for):
    text = token_for(student)
    client.force_login(classmate)

    client.post(reverse("api:token-revoke", args=[PersonalToken.objects.get().uuid]))

    assert PersonalToken.objects.get().revoked_at is None
    client.logout()
    assert call(client, "get", "/api/v1/jobs", text).status_code == 200


def test_an_expired_or_unknown_token_or_none_is_refused_with_401(client, student, token_for):
    text = token_for(student)
    PersonalToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    assert "expired" in problem(call(client, "get", "/api/v1/jobs", text))["detail"]
    assert problem(call(client, "get", "/api/v1/jobs", "lqp_" + "x" * 43))["status"] == 401
    assert problem(call(client, "get", "/api/v1/jobs"))["status"] == 401


def test_a_token_records_when_it_was_last_used(client, student, token_for):
    text = token_for(student)

    call(client, "get", "/api/v1/courses", text)

    assert PersonalToken.objects.get().last_used_at is not None


def test_a_token_without_jobs_submit_gets_403_and_no_job(client, student, assignment, token_for):
    text = token_for(student, scopes=["read:jobs", "read:courses"])

    response = call(client, "post", "/api/v1/courses/cs101/assignments/hello/jobs", text, {})

    assert response.status_code == 403
    assert "jobs:submit" in problem(response)["detail"]
    assert not student.jobs.exists()


def test_a_token_limited_to_one_course_does_not_reach_another(client, student, course, other_course, token_for):
    other_course.enrollments.create(user=student, role="student")
    text = token_for(student, course=course)

    listed = call(client, "get", "/api/v1/courses", text).json()["items"]
    refused = call(client, "get", "/api/v1/courses/cs102/assignments", text)

    assert [item["slug"] for item in listed] == ["cs101"]
    assert refused.status_code == 403
    assert "only the course cs101" in problem(refused)["detail"]
