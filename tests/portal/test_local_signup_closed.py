"""Nobody makes their own local account: people come from the roster, the admin or campus sign-in."""

from django.contrib.auth import get_user_model
from django.urls import reverse

SIGNUP = "/accounts/signup/"
MALLORY = {"username": "mallory", "password1": "a-long-pass-phrase-9"}


def test_with_local_passwords_off_there_is_no_signup_page(client, db):
    assert client.get(SIGNUP).status_code == 404

    assert client.post(SIGNUP, MALLORY).status_code == 404
    assert not get_user_model().objects.filter(username="mallory").exists()


def test_the_signup_page_says_signup_is_closed(client, db, local_passwords_on):
    response = client.get(reverse("account_signup"))

    assert b"Sign Up Closed" in response.content


def test_posting_a_signup_creates_no_account(client, db, local_passwords_on):
    client.get(reverse("account_signup"))

    response = client.post(reverse("account_signup"), MALLORY)

    assert b"Sign Up Closed" in response.content
    assert not get_user_model().objects.filter(username="mallory").exists()
