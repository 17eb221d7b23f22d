"""A student whose campus sign-in sent no e-mail address gives their own on the notifications page: a real SMTP
server receives the verification mail, its link makes the address the account's, and job mail goes there
afterwards; a changed, forged, expired or someone else's link sets nothing and says why.

No cluster: the finished job's mail is sent by the worker's own function (jobs.notifications.job_notify).
"""

import re
import time

import pytest
from django.core import signing
from django.urls import reverse

from jobs import notifications
from jobs.models import NotificationPreference
from tests.http_helpers import page_messages

URL = reverse("jobs:notification-settings")
SITE = "https://labqueue.cs.example.edu"
ADDRESS = "sam.student@mail.example.org"


def link_in(message) -> str:
    """The verification link's path in a mail."""
    [link] = re.findall(rf"{re.escape(SITE)}(/jobs/notifications/address/[^\s]+/)", message.get_content())
    return link


def ask_for_link(client, address: str = ADDRESS):
    return client.post(URL, {"email": address, "send_link": ""}, follow=True)


@pytest.fixture
def without_address(student):
    assert student.email == ""
    return student


def test_a_student_without_an_address_confirms_their_own_and_job_mail_then_goes_there(
    client, without_address, finished_job, smtp_server
):
    NotificationPreference.objects.create(user=without_address, notify_finished=True)
    client.force_login(without_address)
    page = client.get(URL).content.decode()
    assert 'id="notification-address"' in page and "ask your TA" not in page
    assert notifications.job_notify(job_id=finished_job.pk) is False, "no address yet: nothing is mailed"

    response = ask_for_link(client)

    assert page_messages(response) == [
        f"A link is on its way to {ADDRESS}. Open it within a day while signed in here to start mail there."
    ]
    [mail] = smtp_server.wait_for(1)
    assert mail["To"] == ADDRESS and mail["Subject"] == "LabQueue: confirm your address for job mail"
    without_address.refresh_from_db()
    assert without_address.email == "", "the address is not used before its link is opened"

    confirmed = client.get(link_in(mail), follow=True)

    assert confirmed.redirect_chain == [(URL, 302)]
    assert page_messages(confirmed) == [f"Your address {ADDRESS} is confirmed: job mail goes there from now on."]
    assert f"LabQueue mails <strong>{ADDRESS}</strong>" in confirmed.content.decode()
    assert notifications.job_notify(job_id=finished_job.pk) is True
    [_, job_mail] = smtp_server.wait_for(2)
    assert job_mail["To"] == ADDRESS and "finished" in job_mail["Subject"]


def test_a_link_with_a_changed_address_is_refused_and_sets_nothing(client, without_address, smtp_server):
    client.force_login(without_address)
    ask_for_link(client)
    token = link_in(smtp_server.wait_for(1)[0]).split("/")[-2]
    payload, rest = token.split(":", 1)
    forged = signing.b64_encode(signing.b64_decode(payload.encode()).replace(b"mail.example.org", b"evil.example"))

    response = client.get(reverse("jobs:notification-address-confirm", args=[f"{forged.decode()}:{rest}"]), follow=True)

    assert page_messages(response) == [
        "This link is not one LabQueue sent, or part of it was lost in copying. Open it from the mail again, "
        "or ask for a new one below."
    ]
    without_address.refresh_from_db()
    assert without_address.email == ""


class DayOldSigner(signing.TimestampSigner):
    def timestamp(self) -> str:
        return signing.b62_encode(int(time.time()) - notifications.ADDRESS_LINK_SECONDS - 60)


def test_an_expired_link_is_refused_and_says_to_ask_for_a_new_one(client, without_address):
    client.force_login(without_address)
    token = DayOldSigner(salt=notifications.ADDRESS_SALT).sign_object({"user": without_address.pk, "email": ADDRESS})

    response = client.get(reverse("jobs:notification-address-confirm", args=[token]), follow=True)

    assert page_messages(response) == ["This link has expired: links work for 24 hours. Ask for a new one below."]
    without_address.refresh_from_db()
    assert without_address.email == ""


def test_a_link_opened_by_someone_else_sets_nothing_on_either_account(client, without_address, classmate, smtp_server):
    client.force_login(without_address)
    ask_for_link(client)
    link = link_in(smtp_server.wait_for(1)[0])
    classmate.email = ""
    classmate.save(update_fields=["email"])
    client.force_login(classmate)

    response = client.get(link, follow=True)

    assert "This link was sent for another account." in page_messages(response)[0]
    without_address.refresh_from_db()
    classmate.refresh_from_db()
    assert (without_address.email, classmate.email) == ("", "")


def test_a_second_link_within_a_minute_is_not_sent(client, without_address, smtp_server):
    client.force_login(without_address)
    ask_for_link(client)

    response = ask_for_link(client, "other@mail.example.org")

    assert "Wait a minute before asking for another." in page_messages(response)[0]
    time.sleep(0.5)
    assert [mail["To"] for mail in smtp_server.messages] == [ADDRESS]


def test_an_address_that_is_not_one_is_refused_on_the_page(client, without_address, smtp_server):
    client.force_login(without_address)

    response = client.post(URL, {"email": "not an address", "send_link": ""})

    assert response.status_code == 400 and "Enter a valid email address." in response.content.decode()
    assert smtp_server.messages == []


def test_a_student_with_an_address_from_sign_in_gets_no_address_form(client, student):
    student.email = "student1@cs.example.edu"
    student.save(update_fields=["email"])
    client.force_login(student)

    page = client.get(URL).content.decode()

    assert 'id="notification-address"' not in page and "LabQueue mails <strong>student1@cs.example.edu" in page


def test_the_link_needs_a_sign_in_and_a_get(client, without_address):
    link = reverse("jobs:notification-address-confirm", args=["anything"])

    assert client.get(link)["Location"].startswith(reverse("account_login"))
    client.force_login(without_address)
    assert client.post(link).status_code == 405
