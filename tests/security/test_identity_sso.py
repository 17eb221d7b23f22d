"""Campus sign-in through the real test IdPs (OIDC and SAML) when an IdP vouches for more than it may:
a netid the portal must never become, a name outside the IdP's own scope, a netid from an unverified
e-mail, a staff affiliation scoped to another organisation, and a first sign-in onto an account with
administrator rights. Each is refused with a page saying why (never a 500) and a line in the log."""

import copy
import logging

import pytest
import requests
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model

from tests.portal.sso.conftest import OIDC_ID, PEOPLE, SAML_ID, forms, post_form, set_person, sso_login

User = get_user_model()


def refusals(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "portal.auth" and r.levelno == logging.WARNING]


def app_settings(providers: dict, kind: str) -> dict:
    """The allauth app settings of the test IdP of this kind ("saml" or "openid_connect"), to change in a copy."""
    return providers[kind]["APPS"][0]["settings"]


# --- netids the portal must never become ------------------------------------------------------------


@pytest.mark.parametrize(
    "netid, reason",
    [("root", "is a reserved account"), ("daemon", "is a system account on the cluster (uid 1)")],
)
def test_an_idp_vouching_for_root_or_a_system_account_is_refused(live_server, idp, sso, caplog, netid, reason):
    set_person(sso, "student4", eppn=f"{netid}@example.edu")

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        response = sso_login(live_server.url, idp, "student4")

    assert response.status_code == 403 and reason in response.text
    assert "This sign-in cannot be used here" in response.text
    assert not User.objects.filter(netid=netid).exists()
    provider = sso.providers["saml"]["APPS"][0]["provider_id"] if idp.kind == "saml" else OIDC_ID  # the IdP's entity id
    logged = f"SSO login refused ({provider}): “{netid}” {reason}"
    assert [
        message for message in refusals(caplog) if message.startswith(logged) and f"{netid}@example.edu" in message
    ], refusals(caplog)


# --- each IdP asserts names in its own scope only ------------------------------------------------------


def test_an_idp_bound_to_another_scope_cannot_assert_a_campus_name(live_server, sso, settings, caplog):
    providers = copy.deepcopy(sso.providers)
    app_settings(providers, "openid_connect")["netid_scopes"] = ["guests.example.org"]  # a guest IdP, say
    settings.SOCIALACCOUNT_PROVIDERS = providers

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        refused = sso_login(live_server.url, sso.oidc, "student4")

    assert refused.status_code == 403
    assert "This sign-in service may not vouch for “student4@example.edu”" in refused.text
    assert not User.objects.filter(netid="student4").exists()
    assert refusals(caplog) == [
        f"SSO login refused ({OIDC_ID}): This sign-in service may not vouch for “student4@example.edu”. "
        "Use your own campus sign-in."
    ]
    home = sso_login(live_server.url, sso.saml, "student4")  # the campus IdP, bound to example.edu
    assert home.status_code == 200 and User.objects.filter(netid="student4").exists()


# --- a netid from an e-mail claim needs a verified address -------------------------------------------


@pytest.fixture
def netid_from_email(sso, settings):
    settings.LABQUEUE_NETID_ATTRIBUTE = "email"
    return sso


def test_an_unverified_e_mail_gives_no_netid(live_server, netid_from_email, caplog):
    set_person(netid_from_email, "student4", email_verified=False)

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        response = sso_login(live_server.url, netid_from_email.oidc, "student4")

    assert response.status_code == 403 and "did not confirm that your e-mail address is verified" in response.text
    assert not User.objects.exists()
    assert len(refusals(caplog)) == 1


def test_a_verified_e_mail_gives_the_netid(live_server, netid_from_email):
    home = sso_login(live_server.url, netid_from_email.oidc, "student4")  # email_verified: true

    assert home.status_code == 200
    assert User.objects.get().netid == "student4"


def test_a_saml_idp_sending_no_verification_gives_no_netid_from_mail_unless_its_settings_vouch(
    live_server, netid_from_email, settings
):
    refused = sso_login(live_server.url, netid_from_email.saml, "student4")
    assert refused.status_code == 403 and "did not confirm that your e-mail address is verified" in refused.text

    providers = copy.deepcopy(netid_from_email.providers)
    app_settings(providers, "saml")["email_verified"] = True  # "email_verified": true in LABQUEUE_SAML_IDPS
    settings.SOCIALACCOUNT_PROVIDERS = providers
    home = sso_login(live_server.url, netid_from_email.saml, "student4")

    assert home.status_code == 200 and User.objects.get().netid == "student4"


# --- a scoped affiliation counts only in the IdP's own scope ------------------------------------------


@pytest.mark.parametrize("scoped, is_staff", [("staff@other.org", False), ("staff@example.edu", True)])
def test_a_scoped_staff_affiliation_counts_only_in_the_idps_scope(live_server, idp, sso, scoped, is_staff):
    set_person(sso, "opsadmin", affiliation=["member"], scoped_affiliation=[scoped, "member@example.edu"])

    home = sso_login(live_server.url, idp, "opsadmin")

    assert home.status_code == 200
    assert User.objects.get(netid="instructor1").is_staff is is_staff


# --- a first sign-in never takes over an account with administrator rights ----------------------------


@pytest.mark.parametrize("rights", [{"is_staff": True}, {"is_staff": True, "is_superuser": True}])
def test_a_first_sign_in_is_not_linked_to_an_account_with_administrator_rights(live_server, idp, sso, caplog, rights):
    admin = User.objects.create(username="student4", netid="student4", **rights)
    admin.set_unusable_password()
    admin.save()

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        response = sso_login(live_server.url, idp, "student4")

    assert response.status_code == 403
    assert (
        "The portal account for “student4” has administrator rights, so a campus sign-in is linked to it only by "
        "the portal's operators. Ask them to link your campus identity."
    ) in response.text.replace("&#x27;", "'")
    assert not SocialAccount.objects.exists()
    assert User.objects.get() == admin, "nobody new either"
    [message] = refusals(caplog)
    provider = sso.providers["saml"]["APPS"][0]["provider_id"] if idp.kind == "saml" else OIDC_ID
    assert message == (
        f"SSO login refused ({provider}): student4@example.edu would be a first link to student4, which has staff "
        "or superuser rights"
    )


def test_an_operator_links_the_campus_identity_in_the_admin_and_then_it_signs_in(live_server, sso, client):
    admin = User.objects.create(username="student4", netid="student4", is_staff=True)
    admin.set_unusable_password()
    admin.save()
    operator = User.objects.create(username="ops", is_staff=True, is_superuser=True)
    client.force_login(operator)
    saml_app = sso.providers["saml"]["APPS"][0]
    assert saml_app["client_id"] == SAML_ID

    added = client.post(
        "/admin/socialaccount/socialaccount/add/",
        {
            "user": admin.pk,
            "provider": saml_app["provider_id"],
            "uid": "student4@example.edu",
            "extra_data": '{"note": "linked by hand"}',
        },
    )
    assert added.status_code == 302, added.context["adminform"].form.errors

    home = sso_login(live_server.url, sso.saml, "student4")

    assert home.status_code == 200 and home.url == f"{live_server.url}/"
    assert admin.socialaccount_set.count() == 1 and User.objects.filter(netid="student4").count() == 1


# --- the admin's sign-in is campus sign-in, and back to the admin ------------------------------------


def test_staff_reach_the_admin_through_campus_sign_in_and_come_back_to_it(live_server, idp):
    browser = requests.Session()
    login_page = browser.get(f"{live_server.url}/admin/", timeout=30)
    assert login_page.url == f"{live_server.url}/accounts/login/?next=/admin/"
    assert 'name="password"' not in login_page.text

    button = next(form for form in forms(login_page) if idp.login_path in form["action"])
    assert button["data"]["next"] == "/admin/"
    at_idp = browser.post(button["action"], data=button["data"], timeout=30)
    field = "login" if idp.kind == "oidc" else "username"
    credentials = {field: "opsadmin", "password": PEOPLE["opsadmin"]["password"]}
    response = post_form(browser, at_idp, "password", **credentials)
    if idp.kind == "saml":
        response = post_form(browser, response, "SAMLResponse")

    assert response.status_code == 200 and response.url == f"{live_server.url}/admin/"
    assert "Site administration" in response.text
