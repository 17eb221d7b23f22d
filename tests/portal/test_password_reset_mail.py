"""Password reset by e-mail where local passwords are on, through a real SMTP server; none where they are off."""

import logging
import re
import time

import pytest
from django.urls import reverse
from django.utils.html import escape

from tests.conftest import make_user
from tests.service_account import free_port


@pytest.fixture
def demo_user(db):
    return make_user("student7", "student7", email="student7@cs.example.edu")


def test_a_forgotten_password_is_reset_through_the_mailed_link(client, demo_user, smtp_server, local_passwords_on):
    login_page = client.get(reverse("account_login")).content.decode()
    assert f'id="password-reset" href="{reverse("account_reset_password")}"' in login_page

    sent = client.post(reverse("account_reset_password"), {"email": "student7@cs.example.edu"})
    assert sent.status_code == 302

    [message] = smtp_server.wait_for(1, timeout=10)
    assert message["To"] == "student7@cs.example.edu"
    assert message["From"] == "LabQueue <labqueue@cs.example.edu>"
    link = re.search(r"https?://testserver(/accounts/password/reset/key/\S+/)", message.get_body().get_content())
    form = client.get(link.group(1), follow=True)
    assert form.status_code == 200
    set_password_url = form.redirect_chain[-1][0]
    new_password = "a-new-pass-phrase-42"
    done = client.post(set_password_url, {"password1": new_password, "password2": new_password})
    assert done.status_code == 302
    client.logout()

    signed_in = client.post(reverse("account_login"), {"login": "student7", "password": new_password})

    assert signed_in.status_code == 302
    assert client.get(reverse("courses:course-list")).wsgi_request.user == demo_user
    client.logout()
    assert client.post(reverse("account_login"), {"login": "student7", "password": "pw-student7"}).status_code == 200


def test_when_the_mail_server_does_not_answer_the_person_is_told(
    client, demo_user, settings, local_passwords_on, caplog
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # nothing listens there

    with caplog.at_level(logging.ERROR, logger="portal.auth"):
        response = client.post(reverse("account_reset_password"), {"email": "student7@cs.example.edu"}, follow=True)

    [record] = [record for record in caplog.records if record.name == "portal.auth"]
    assert record.getMessage() == f"Password reset mail for {demo_user} could not be sent"
    assert record.exc_info is not None, "the operators get the mail server's error"

    assert response.status_code == 200
    page = response.content.decode()
    told = (
        "The password-reset e-mail could not be sent: the portal's mail server did not take it. Try again in a few "
        f"minutes; if this keeps happening, contact {settings.LABQUEUE_SUPPORT_CONTACT}."
    )
    assert f">{escape(told)}<" in page
    assert "<h1>Password reset</h1>" in page


def test_with_local_passwords_off_the_reset_address_explains_and_sends_nothing(client, demo_user, smtp_server):
    assert 'id="password-reset"' not in client.get(reverse("account_login")).content.decode()

    page = client.get("/accounts/password/reset/")
    posted = client.post("/accounts/password/reset/", {"email": "student7@cs.example.edu"})

    assert page.status_code == posted.status_code == 404
    assert "<h1>No password to reset</h1>" in page.content.decode()
    assert "you sign in with your campus account" in page.content.decode()
    time.sleep(0.5)  # a mail would have reached the server by now
    assert smtp_server.messages == []
