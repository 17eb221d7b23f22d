"""Nobody makes their own local account: people come from the roster, the admin or campus sign-in."""

from django.contrib.auth import get_user_model
from django.urls import reverse


def test_the_signup_page_says_signup_is_closed(client, db):
    response = client.get(reverse("account_signup"))

    assert b"Sign Up Closed" in response.content


def test_posting_a_signup_creates_no_account(client, db):
    client.get(reverse("account_signup"))

    response = client.post(reverse("account_signup"), {"username": "mallory", "password1": "a-long-pass-phrase-9"})

    assert b"Sign Up Closed" in response.content
    assert not get_user_model().objects.filter(username="mallory").exists()
