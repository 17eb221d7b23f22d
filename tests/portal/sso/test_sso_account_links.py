"""Logins through real IdPs to accounts that already exist: a netid that changed, an account linked
before it had a netid, and staff flags the SSO rules must not take away.

A first campus sign-in never links to an account with staff or superuser rights (tests/security/
test_identity_sso_privileged_link.py): here the person signs in once, and then an operator gives the
linked account its rights by hand, as in the admin."""

import logging

from django.contrib.auth import get_user_model

from .conftest import set_person, sso_login

User = get_user_model()


def test_an_identity_that_now_gives_another_netid_is_refused_for_the_linked_account(live_server, sso, caplog):
    # The OIDC account is keyed on the IdP's stable `sub`, so the same account comes back with a new eppn.
    assert sso_login(live_server.url, sso.oidc, "student4").status_code == 200
    set_person(sso, "student4", eppn="student3@example.edu")

    with caplog.at_level(logging.ERROR, logger="portal.auth"):
        response = sso_login(live_server.url, sso.oidc, "student4")

    assert response.status_code == 403
    assert (
        "Your portal account is linked to a different cluster user name than your campus identity now gives. "
        "Ask the portal staff to check your account."
    ) in response.text
    assert User.objects.get().netid == "student4", "the account keeps its netid..."
    assert not User.objects.filter(netid="student3").exists(), "...and nobody becomes student3"
    assert [r.getMessage() for r in caplog.records if r.name == "portal.auth" and r.levelno == logging.ERROR] == [
        "SSO identity student3@example.edu maps to student3, but its account has netid student4"
    ], "the operators are told which identity and which two names"


def test_a_linked_account_without_a_netid_gets_it_from_its_next_login(live_server, idp):
    sso_login(live_server.url, idp, "student4")
    User.objects.filter(netid="student4").update(netid=None)  # linked by hand before netids were recorded

    home = sso_login(live_server.url, idp, "student4")

    assert home.status_code == 200
    assert User.objects.get().netid == "student4"


def operator_sets(**flags) -> User:
    """What an operator does in the admin to the account student4's first sign-in made."""
    User.objects.filter(netid="student4").update(**flags)
    return User.objects.get(netid="student4")


def test_an_sso_login_does_not_take_the_staff_flag_from_a_superuser(live_server, idp):
    assert sso_login(live_server.url, idp, "student4").status_code == 200
    admin = operator_sets(is_superuser=True, is_staff=True)

    home = sso_login(live_server.url, idp, "student4")  # affiliation "student": not staff by the rules

    assert home.status_code == 200
    admin.refresh_from_db()
    assert admin.is_staff and admin.is_superuser


def test_without_staff_rules_an_sso_login_leaves_a_staff_flag_set_by_hand(live_server, idp, settings):
    settings.LABQUEUE_STAFF_AFFILIATIONS = []
    settings.LABQUEUE_STAFF_GROUPS = []
    assert sso_login(live_server.url, idp, "student4").status_code == 200
    operator = operator_sets(is_staff=True)

    assert sso_login(live_server.url, idp, "student4").status_code == 200

    operator.refresh_from_db()
    assert operator.is_staff


def test_with_staff_rules_an_sso_login_removes_a_staff_flag_the_identity_does_not_carry(live_server, idp):
    assert sso_login(live_server.url, idp, "student4").status_code == 200
    former = operator_sets(is_staff=True)

    sso_login(live_server.url, idp, "student4")

    former.refresh_from_db()
    assert not former.is_staff
