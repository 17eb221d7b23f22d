"""The attack: an instructor imports a roster row for any cluster account (even root) with an e-mail
address they own, asks the portal for a password reset, sets a password and signs in as that account
(and so submits jobs as it). Each step is the real one: the roster upload view, then a browser over
HTTP against the running portal, with the reset mail read from Django's test outbox.

With default settings local passwords are off: there is no reset, no password login, and a roster never
makes a credential. With local passwords on (the demo), a reset is still never mailed for an account
without a password of its own.
"""

import logging
import re

import pytest
import requests
from django.contrib.auth import get_user_model

from tests.courses.test_roster import confirm, upload
from tests.portal.sso.conftest import post_form

User = get_user_model()
ATTACKER_MAIL = "mallory@attacker.example"
NEW_PASSWORD = "taken-over-9-Passphrase"


def import_row(client, instructor, netid: str) -> None:
    """The instructor uploads a one-row roster and confirms it when the portal offers to."""
    client.force_login(instructor)
    preview = upload(client, f"netid,email,name,role\n{netid},{ATTACKER_MAIL},Target,student\n")
    if preview.context["confirm"] is not None:
        confirm(client, preview)


def reset_password_by_mail(portal: str, browser: requests.Session, outbox) -> list[str]:
    """Ask for a reset to the attacker's address and follow every link mailed there; the links followed."""
    page = browser.get(f"{portal}/accounts/password/reset/", timeout=10)
    if page.status_code != 200:
        return []
    post_form(browser, page, "email", email=ATTACKER_MAIL)
    links = [link for mail in outbox for link in re.findall(r"https?://\S+/password/reset/key/\S+", mail.body)]
    for link in links:
        form_page = browser.get(link, timeout=10)
        post_form(browser, form_page, "password1", password1=NEW_PASSWORD, password2=NEW_PASSWORD)
    return links


def password_login(portal: str, browser: requests.Session, username: str, password: str) -> requests.Response:
    browser.get(f"{portal}/accounts/login/", timeout=10)
    data = {"csrfmiddlewaretoken": browser.cookies.get("csrftoken", ""), "login": username, "password": password}
    return browser.post(f"{portal}/accounts/login/", data=data, timeout=10)


def signed_in(portal: str, browser: requests.Session) -> bool:
    return not browser.get(f"{portal}/", timeout=10).url.startswith(f"{portal}/accounts/login/")


@pytest.mark.parametrize("target", ["root", "student4"])
def test_a_roster_e_mail_does_not_let_an_instructor_take_over_a_cluster_account(
    client, live_server, course, instructor, mailoutbox, target
):
    import_row(client, instructor, target)
    browser = requests.Session()

    links = reset_password_by_mail(live_server.url, browser, mailoutbox)
    login = password_login(live_server.url, browser, target, NEW_PASSWORD)

    assert not signed_in(live_server.url, browser), f"signed in as {target}"
    assert login.status_code == 403, "no password login at all"
    assert links == [] and mailoutbox == [], "no reset mail"
    assert not User.objects.filter(netid=target).exclude(password__startswith="!").exists(), "no credential"
    assert browser.get(f"{live_server.url}/accounts/password/reset/", timeout=10).status_code == 404


def test_with_local_passwords_on_a_roster_account_still_gets_no_reset_mail(
    client, live_server, course, instructor, mailoutbox, local_passwords_on, caplog
):
    import_row(client, instructor, "student4")
    account = User.objects.get(netid="student4")  # the roster made the account
    browser = requests.Session()

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        links = reset_password_by_mail(live_server.url, browser, mailoutbox)
    password_login(live_server.url, browser, "student4", NEW_PASSWORD)

    assert links == [], "the reset form answers as for any address, and mails nothing"
    said = [record.getMessage() for record in caplog.records if record.name == "portal.auth"]
    assert said == [f"Password reset for {account} (netid student4) not sent: no local password to reset"]
    assert not signed_in(live_server.url, browser)
    assert not User.objects.get(netid="student4").has_usable_password()


def test_with_local_passwords_on_a_person_with_a_password_can_still_reset_it(
    live_server, student, mailoutbox, local_passwords_on
):
    """The control for the test above: the reset itself works, for an account that has a password of its own."""
    User.objects.filter(pk=student.pk).update(email=ATTACKER_MAIL)
    browser = requests.Session()

    links = reset_password_by_mail(live_server.url, browser, mailoutbox)
    password_login(live_server.url, browser, "student1", NEW_PASSWORD)

    assert len(links) == 1
    assert signed_in(live_server.url, browser)
