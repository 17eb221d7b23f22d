"""What the portal's logout sends to the SAML IdP: a LogoutRequest to the IdP the person signed in
through (even when the portal knows several), naming that person; none for a session whose account
was switched off meanwhile (no one is signed in any more); and, when single logout has to be skipped,
a log line that says for which IdP.
"""

import base64
import copy
import logging
import zlib
from urllib.parse import parse_qs, urlsplit
from xml.etree import ElementTree

import requests
from django.contrib.auth import get_user_model
from django.urls import reverse

from .conftest import SAML_ID, forms, sso_login

SAML = "{urn:oasis:names:tc:SAML:2.0:assertion}"


def log_out(browser: requests.Session, home: requests.Response, **options) -> requests.Response:
    form = next(f for f in forms(home) if f["action"].endswith(reverse("account_logout")))
    return browser.post(form["action"], data=form["data"], timeout=30, **options)


def logout_request(response: requests.Response) -> ElementTree.Element:
    """The LogoutRequest the portal's redirect carries to the IdP (HTTP-Redirect binding)."""
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    return ElementTree.fromstring(zlib.decompress(base64.b64decode(query["SAMLRequest"][0]), -15))


def test_the_logout_request_names_the_person_who_signed_in(live_server, sso):
    browser = requests.Session()
    home = sso_login(live_server.url, sso.saml, "student4", browser)
    assert home.url == f"{live_server.url}/"

    response = log_out(browser, home, allow_redirects=False)

    assert response.status_code == 302 and response.headers["Location"].startswith(f"{sso.saml.url}/idp/slo/")
    assert logout_request(response).find(f"{SAML}NameID").text == "student4@example.edu"


def test_with_two_saml_idps_logout_goes_to_the_one_the_person_signed_in_through(live_server, sso, settings):
    providers = copy.deepcopy(sso.providers)
    other = copy.deepcopy(providers["saml"]["APPS"][0])
    other.update(client_id="other-campus-saml", name="Other Campus (SAML)", provider_id="https://idp.other.example/")
    other["settings"]["idp"].update(
        entity_id="https://idp.other.example/",
        sso_url="https://idp.other.example/sso/",
        slo_url="https://idp.other.example/slo/",
    )
    providers["saml"]["APPS"].insert(0, other)
    settings.SOCIALACCOUNT_PROVIDERS = providers
    browser = requests.Session()
    home = sso_login(live_server.url, sso.saml, "student4", browser)
    assert home.url == f"{live_server.url}/"

    response = log_out(browser, home)

    assert any(r.url.startswith(f"{sso.saml.url}/idp/slo/") for r in response.history), [
        r.url for r in response.history
    ]
    assert response.status_code == 200 and response.url.startswith(f"{live_server.url}/accounts/login/")
    assert browser.get(f"{live_server.url}/", timeout=10).url.startswith(f"{live_server.url}/accounts/login/")


def test_a_skipped_single_logout_is_logged_with_the_idp_it_was_for(live_server, sso, settings, caplog):
    browser = requests.Session()
    home = sso_login(live_server.url, sso.saml, "student4", browser)
    settings.SOCIALACCOUNT_PROVIDERS = {**sso.providers, "saml": {"APPS": []}}  # the IdP was removed

    with caplog.at_level(logging.ERROR, logger="portal.auth"):
        log_out(browser, home)

    messages = [record.getMessage() for record in caplog.records if record.name == "portal.auth"]
    assert messages == [f"SAML single logout skipped for {SAML_ID}"]


def test_a_session_whose_account_was_deactivated_is_not_sent_to_the_idp_logout(live_server, sso):
    browser = requests.Session()
    home = sso_login(live_server.url, sso.saml, "student4", browser)
    assert home.url == f"{live_server.url}/"
    get_user_model().objects.filter(netid="student4").update(is_active=False)  # the staff switched it off

    response = log_out(browser, home, allow_redirects=False)  # the Log out button of a page still open

    assert response.status_code == 302 and response.headers["Location"] == reverse("account_login")
