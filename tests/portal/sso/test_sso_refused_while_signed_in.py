"""Someone already signed in who starts a campus sign-in the portal refuses (a shared lab computer, a
second campus identity) stays signed in as before, and the refusal page shows it like every other page:
their name and the Log out button.
"""

import pytest
import requests
from django.contrib.auth import get_user_model

from .conftest import PEOPLE, forms, post_form, set_person, sso_login


@pytest.mark.parametrize(
    "visitor, reason",
    [
        ({}, "not from a campus this portal serves"),
        ({"eppn": "root@example.edu"}, "“root” is a reserved account on the cluster"),
        ({"eppn": "nocluster@example.edu"}, "You need a cluster account first"),
        ({"eppn": "student1@example.edu"}, "has administrator rights"),  # student1: an operator's account here
    ],
)
def test_a_refused_identity_leaves_the_earlier_sign_in_and_the_page_shows_it(live_server, sso, course, visitor, reason):
    get_user_model().objects.create(username="student1", netid="student1", is_staff=True)
    set_person(sso, "visitor", **visitor)
    browser = requests.Session()
    home = sso_login(live_server.url, sso.oidc, "student4", browser)
    assert home.url == f"{live_server.url}/"
    token = next(form for form in forms(home) if "csrfmiddlewaretoken" in form["data"])["data"]["csrfmiddlewaretoken"]

    at_idp = browser.post(f"{live_server.url}{sso.saml.login_path}", data={"csrfmiddlewaretoken": token}, timeout=30)
    assert at_idp.url.startswith(sso.saml.url), at_idp.url
    answer = post_form(browser, at_idp, "password", username="visitor", password=PEOPLE["visitor"]["password"])
    refused = post_form(browser, answer, "SAMLResponse")

    assert refused.status_code == 403 and reason in refused.text
    assert "Pat Four (student4)" in refused.text and "Log out" in refused.text
    assert browser.get(f"{live_server.url}/", timeout=10).url == f"{live_server.url}/"


def test_a_sign_in_refused_for_a_changed_netid_leaves_the_earlier_sign_in_and_the_page_shows_it(live_server, sso):
    browser = requests.Session()
    home = sso_login(live_server.url, sso.oidc, "student4", browser)
    set_person(sso, "student4", eppn="student3@example.edu")
    token = next(form for form in forms(home) if "csrfmiddlewaretoken" in form["data"])["data"]["csrfmiddlewaretoken"]

    # The IdP still knows this browser, so it answers at once with the changed identity.
    refused = browser.post(f"{live_server.url}{sso.oidc.login_path}", data={"csrfmiddlewaretoken": token}, timeout=30)

    assert refused.status_code == 403 and "linked to a different cluster user name" in refused.text
    assert "Pat Four (student4)" in refused.text and "Log out" in refused.text
    assert browser.get(f"{live_server.url}/", timeout=10).url == f"{live_server.url}/"
