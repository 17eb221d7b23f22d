"""Portal logout after a SAML login when the IdP's single logout cannot be used: the portal session still ends."""

import copy
import logging

import requests
from django.urls import reverse

from .conftest import forms, sso_login


def log_out(live_server, browser: requests.Session, home: requests.Response) -> requests.Response:
    form = next(f for f in forms(home) if f["action"].endswith(reverse("account_logout")))
    return browser.post(form["action"], data=form["data"], timeout=30)


def assert_logged_out_without_visiting_the_idp(live_server, sso, browser, response) -> None:
    assert not any(r.url.startswith(sso.saml.url) for r in response.history), [r.url for r in response.history]
    assert response.status_code == 200 and response.url.startswith(f"{live_server.url}/accounts/login/")
    assert browser.get(f"{live_server.url}/", timeout=10).url.startswith(f"{live_server.url}/accounts/login/")


def test_a_saml_idp_without_single_logout_gets_a_plain_portal_logout(live_server, sso, settings):
    providers = copy.deepcopy(sso.providers)
    del providers["saml"]["APPS"][0]["settings"]["idp"]["slo_url"]
    settings.SOCIALACCOUNT_PROVIDERS = providers
    browser = requests.Session()
    home = sso_login(live_server.url, sso.saml, "student4", browser)
    assert home.url == f"{live_server.url}/"

    response = log_out(live_server, browser, home)

    assert_logged_out_without_visiting_the_idp(live_server, sso, browser, response)


def test_logout_still_works_after_the_saml_idp_was_removed_from_the_settings(live_server, sso, settings, caplog):
    browser = requests.Session()
    home = sso_login(live_server.url, sso.saml, "student4", browser)
    assert home.url == f"{live_server.url}/"
    settings.SOCIALACCOUNT_PROVIDERS = {**sso.providers, "saml": {"APPS": []}}

    with caplog.at_level(logging.ERROR, logger="portal.auth"):
        response = log_out(live_server, browser, home)

    assert_logged_out_without_visiting_the_idp(live_server, sso, browser, response)
    assert "SAML single logout skipped for campus-saml" in caplog.text
