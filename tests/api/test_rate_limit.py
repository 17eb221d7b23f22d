"""One person's API requests are counted per minute in the broker's Redis, all their tokens together: past the
limit, 429 with Retry-After, for that person only. And one person has at most LABQUEUE_API_TOKENS_PER_PERSON
active tokens, so neither more tokens nor endless ones buy more requests or more rows."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

import api.services
from api.models import PersonalToken
from api.selectors import token_active_count
from tests.api.conftest import call, problem
from tests.concurrency import at_once, held_until_both_read

NEW_TOKEN = {"name": "ci", "scopes": ["read:jobs"], "days": "30"}


def test_over_the_rate_a_person_gets_429_with_retry_after_on_every_token_and_another_person_does_not(
    client, settings, student, classmate, token_for
):
    settings.LABQUEUE_API_REQUESTS_PER_MINUTE = 3
    text, second, theirs = token_for(student), token_for(student), token_for(classmate)

    # Seven requests: even if a minute ends among them, one minute holds four, one over the limit.
    answers = [call(client, "get", "/api/v1/courses", text) for _ in range(7)]

    limited = [response for response in answers if response.status_code == 429]
    assert limited, [response.status_code for response in answers]
    assert 1 <= int(limited[0]["Retry-After"]) <= 60
    assert "Your API tokens made more than 3 requests in a minute" in problem(limited[0])["detail"]
    # A second token of the same person is the same person: it buys no more requests (unless the minute just
    # turned, in which case the next requests of the new minute run out as well).
    assert 429 in [call(client, "get", "/api/v1/courses", second).status_code for _ in range(4)]
    assert call(client, "get", "/api/v1/courses", theirs).status_code == 200


def test_a_person_with_the_most_active_tokens_is_refused_another_until_they_revoke_one(
    client, settings, student, classmate, token_for
):
    settings.LABQUEUE_API_TOKENS_PER_PERSON = 2
    token_for(student)
    token_for(student)
    token_for(classmate)  # someone else's tokens do not count
    # Neither does a token revoked or expired.
    PersonalToken.objects.create(
        owner=student, name="old", digest="a" * 64, hint="lqp_old", expires_at=timezone.now() - timedelta(days=1)
    )
    PersonalToken.objects.create(
        owner=student,
        name="gone",
        digest="b" * 64,
        hint="lqp_gon",
        expires_at=timezone.now() + timedelta(days=9),
        revoked_at=timezone.now(),
    )
    client.force_login(student)

    refused = client.post(reverse("api:token-settings"), {**NEW_TOKEN, "name": "one more"})

    assert refused.status_code == 400
    page = refused.content.decode()
    assert "You have 2 active API tokens, the most one person may have. Revoke one you no longer use" in page
    assert 'value="one more"' in page  # what was typed is kept
    assert not PersonalToken.objects.filter(name="one more").exists()
    assert PersonalToken.objects.filter(owner=student).count() == 4

    client.post(reverse("api:token-revoke", args=[PersonalToken.objects.filter(owner=student, name="script")[0].uuid]))
    made = client.post(reverse("api:token-settings"), {**NEW_TOKEN, "name": "one more"})

    assert made.status_code == 200
    assert PersonalToken.objects.filter(owner=student, name="one more").exists()


@pytest.mark.django_db(transaction=True)
def test_two_new_tokens_at_once_cannot_pass_the_limit(settings, student, monkeypatch):
    """Both requests would count the person's tokens (1 of 2) before either saves its own. The barrier only makes
    that interleaving certain; the lock before counting makes the second request wait instead (the barrier then
    times out), and it is refused."""
    settings.LABQUEUE_API_TOKENS_PER_PERSON = 2
    api.services.token_create(owner=student, name="first", scopes=["read:jobs"], course=None, days=30)
    monkeypatch.setattr(api.services, "token_active_count", held_until_both_read(token_active_count))

    def make() -> int:
        browser = Client()
        browser.force_login(student)
        return browser.post(reverse("api:token-settings"), NEW_TOKEN).status_code

    answers = at_once(make)

    assert sorted(answers) == [200, 400]
    assert PersonalToken.objects.filter(owner=student).count() == 2
