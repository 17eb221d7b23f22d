"""A second IdP that may vouch for campus netids, but not for rights, sends the claims that grant them.

The attack: besides the campus IdP, the portal has a second one configured (a partner's, a department's)
that may assert names in the campus scope. It sends eduPersonAffiliation=staff, a staff group in
isMemberOf or eduPersonEntitlement, or an instructor group, for someone signing in through it. Only an
IdP whose entry in LABQUEUE_SAML_IDPS / LABQUEUE_OIDC_PROVIDERS says ``"trusted_for": ["staff",
"course_roles"]`` may grant those rights: from any other the claims are ignored and logged (a
`portal.auth` warning) and the sign-in goes on with no rights. Each test signs in through the real test
IdPs (tests/portal/sso/conftest.py), each in turn playing the second IdP."""

import logging

import pytest
import requests
from django.contrib.auth import get_user_model
from django.urls import reverse

from courses.models import Enrollment, Role
from portal import sso
from tests.portal.sso.conftest import GROUP_ROLES, OIDC_ID, portal_providers, set_person, sso_login

User = get_user_model()
STAFF_GROUP = "urn:example.edu:hpc-admins"
STAFF_ENTITLEMENT = "urn:mace:example.edu:entitlement:hpc-admin"
INSTRUCTOR_GROUP = "urn:example.edu:cs101:instructors"
INSTRUCTOR_ENTITLEMENT = "urn:mace:example.edu:entitlement:cs101-instructor"

#: What the second IdP sends for student4 (netid student4), one way of claiming a right each.
STAFF_CLAIMS = {
    "eduPersonAffiliation=staff": {"affiliation": ["staff", "member"]},
    "eduPersonScopedAffiliation=staff@example.edu": {"scoped_affiliation": ["staff@example.edu"]},
    "isMemberOf=<staff group>": {"groups": [STAFF_GROUP]},
    "eduPersonEntitlement=<staff entitlement>": {"entitlement": [STAFF_ENTITLEMENT]},
}
INSTRUCTOR_CLAIMS = {
    "isMemberOf=<instructor group>": {"groups": [INSTRUCTOR_GROUP]},
    "eduPersonEntitlement=<instructor entitlement>": {"entitlement": [INSTRUCTOR_ENTITLEMENT]},
}


@pytest.fixture
def rights_rules(sso, settings):
    """The campus's rules: who is staff, and which groups and entitlements give a course role."""
    settings.LABQUEUE_STAFF_AFFILIATIONS = ["staff"]
    settings.LABQUEUE_STAFF_GROUPS = [STAFF_GROUP, STAFF_ENTITLEMENT]
    settings.LABQUEUE_GROUP_ROLES = {
        **GROUP_ROLES,
        INSTRUCTOR_GROUP: "cs101:instructor",
        INSTRUCTOR_ENTITLEMENT: "cs101:instructor",
    }
    return sso


@pytest.fixture(params=["oidc", "saml"])
def second_idp(request, rights_rules, settings):
    """One test IdP as the second IdP, bound to the campus scope and trusted for nothing; the other stays the
    campus's own, trusted for staff and course roles."""
    idps = rights_rules
    untrusted = {f"{request.param}_trusted_for": ()}
    settings.SOCIALACCOUNT_PROVIDERS = portal_providers(idps.oidc.url, idps.saml.url, idps.saml_cert, **untrusted)
    return getattr(idps, request.param)


def provider_name(idps, idp) -> str:
    """The name portal.auth logs an IdP under: a SAML IdP's entity id, an OIDC provider's id."""
    return idps.providers["saml"]["APPS"][0]["provider_id"] if idp.kind == "saml" else OIDC_ID


def ignored(caplog) -> list[str]:
    """The portal.auth warnings about claims an IdP is not trusted for."""
    warnings = [r.getMessage() for r in caplog.records if r.name == "portal.auth" and r.levelno == logging.WARNING]
    return [message for message in warnings if message.startswith("SSO claims ignored")]


def overview_status(live_server, browser: requests.Session) -> int:
    """What the operations-staff-only usage overview answers this browser's session."""
    return browser.get(live_server.url + reverse("reports:usage-overview"), timeout=30).status_code


def sent(claims: dict) -> dict:
    """student4 sends these claims and nothing else that grants a right (no course group either)."""
    return {"affiliation": ["member"], "groups": [], **claims}


@pytest.mark.parametrize("claims", STAFF_CLAIMS.values(), ids=STAFF_CLAIMS.keys())
def test_staff_claims_from_an_idp_not_trusted_for_staff_make_nobody_staff(
    live_server, second_idp, rights_rules, course, caplog, claims
):
    set_person(rights_rules, "student4", **sent(claims))
    browser = requests.Session()

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        home = sso_login(live_server.url, second_idp, "student4", browser)

    assert home.status_code == 200 and home.url == f"{live_server.url}/", "the sign-in itself still works"
    assert not User.objects.get(netid="student4").is_staff
    assert overview_status(live_server, browser) == 403
    [message] = ignored(caplog)
    assert message.startswith(f"SSO claims ignored ({provider_name(rights_rules, second_idp)}): student4@example.edu ")
    assert message.endswith("but this IdP is not trusted for staff")


@pytest.mark.parametrize("claims", INSTRUCTOR_CLAIMS.values(), ids=INSTRUCTOR_CLAIMS.keys())
def test_course_role_claims_from_an_idp_not_trusted_for_course_roles_give_no_role(
    live_server, second_idp, rights_rules, course, caplog, claims
):
    set_person(rights_rules, "student4", **sent(claims))

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        home = sso_login(live_server.url, second_idp, "student4")

    assert home.status_code == 200
    person = User.objects.get(netid="student4")
    assert not Enrollment.objects.filter(user=person).exists(), "no instructor role, nor any other"
    assert not person.is_staff
    [message] = ignored(caplog)
    assert message.startswith(f"SSO claims ignored ({provider_name(rights_rules, second_idp)}): student4@example.edu ")
    assert message.endswith("but this IdP is not trusted for course_roles")


def test_a_staff_member_signing_in_through_the_untrusted_idp_has_no_staff_rights_there(
    live_server, second_idp, rights_rules, course
):
    campus = rights_rules.saml if second_idp.kind == "oidc" else rights_rules.oidc
    set_person(rights_rules, "student4", **sent({"groups": [STAFF_GROUP, INSTRUCTOR_GROUP]}))
    assert sso_login(live_server.url, second_idp, "student4").status_code == 200  # links both IdPs' accounts
    through_campus = requests.Session()
    assert sso_login(live_server.url, campus, "student4", through_campus).status_code == 200
    assert overview_status(live_server, through_campus) == 200, "the campus IdP is trusted for staff"

    through_second = requests.Session()
    assert sso_login(live_server.url, second_idp, "student4", through_second).status_code == 200

    assert not User.objects.get(netid="student4").is_staff
    assert overview_status(live_server, through_second) == 403


@pytest.mark.parametrize(
    "claims", [*STAFF_CLAIMS.values(), *INSTRUCTOR_CLAIMS.values()], ids=[*STAFF_CLAIMS, *INSTRUCTOR_CLAIMS]
)
def test_the_same_idp_trusted_for_staff_and_course_roles_grants_them(
    live_server, second_idp, rights_rules, settings, course, caplog, claims
):
    settings.SOCIALACCOUNT_PROVIDERS = portal_providers(
        rights_rules.oidc.url,
        rights_rules.saml.url,
        rights_rules.saml_cert,
        **{f"{second_idp.kind}_trusted_for": ("staff", "course_roles")},
    )
    set_person(rights_rules, "student4", **sent(claims))
    browser = requests.Session()

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        home = sso_login(live_server.url, second_idp, "student4", browser)

    assert home.status_code == 200
    person = User.objects.get(netid="student4")
    if claims in STAFF_CLAIMS.values():
        assert person.is_staff and overview_status(live_server, browser) == 200
    else:
        assert Enrollment.objects.get(user=person, course=course).role == Role.INSTRUCTOR
    assert ignored(caplog) == []


def test_an_idp_trusted_for_course_roles_only_gives_roles_but_not_staff(
    live_server, second_idp, rights_rules, settings, course, caplog
):
    settings.SOCIALACCOUNT_PROVIDERS = portal_providers(
        rights_rules.oidc.url,
        rights_rules.saml.url,
        rights_rules.saml_cert,
        **{f"{second_idp.kind}_trusted_for": ("course_roles",)},
    )
    set_person(rights_rules, "student4", **sent({"groups": [STAFF_GROUP, INSTRUCTOR_GROUP]}))

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        assert sso_login(live_server.url, second_idp, "student4").status_code == 200

    person = User.objects.get(netid="student4")
    assert not person.is_staff
    assert Enrollment.objects.get(user=person, course=course).role == Role.INSTRUCTOR
    [message] = ignored(caplog)
    assert message == (
        f"SSO claims ignored ({provider_name(rights_rules, second_idp)}): student4@example.edu sent "
        f"{STAFF_GROUP}, but this IdP is not trusted for staff"
    )


def test_claims_ignored_at_a_later_sign_in_are_logged_under_the_idp_too(
    live_server, second_idp, rights_rules, course, caplog
):
    set_person(rights_rules, "student4", **sent({"groups": [STAFF_GROUP], "entitlement": [STAFF_ENTITLEMENT]}))
    assert sso_login(live_server.url, second_idp, "student4").status_code == 200  # the account is made
    caplog.clear()

    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        assert sso_login(live_server.url, second_idp, "student4").status_code == 200

    assert not User.objects.get(netid="student4").is_staff
    assert ignored(caplog) == [
        f"SSO claims ignored ({provider_name(rights_rules, second_idp)}): student4@example.edu sent "
        f"{STAFF_GROUP}, {STAFF_ENTITLEMENT}, but this IdP is not trusted for staff"
    ]


# --- how "trusted_for" is read (pure) ------------------------------------------------------------------


def test_trusted_for_travels_in_the_allauth_app_settings_and_defaults_to_nothing():
    for item, trusted_for in [
        ({}, frozenset()),
        ({"trusted_for": []}, frozenset()),
        ({"trusted_for": " staff "}, {"staff"}),
        ({"trusted_for": ["course_roles", "staff", "staff"]}, {"staff", "course_roles"}),
    ]:
        saml = sso.saml_app({"id": "s", "entity_id": "https://idp", "metadata_url": "https://idp/md", **item}, "eppn")
        oidc = sso.oidc_app({"id": "o", "server_url": "https://op", "client_id": "x", **item})

        assert sso.idp_trust(saml["settings"]).trusted_for == trusted_for
        assert sso.idp_trust(oidc["settings"]).trusted_for == trusted_for


@pytest.mark.parametrize("trusted_for", ["Staff", ["staff", "instructor"], "staff,course_roles", True, ["*"]])
def test_a_right_the_portal_does_not_know_stops_the_start(trusted_for):
    with pytest.raises(ValueError, match="trusted_for: unknown"):
        sso.socialaccount_providers(
            saml=[],
            oidc=[{"id": "o", "server_url": "https://op", "client_id": "x", "trusted_for": trusted_for}],
            netid_claim="eppn",
        )


def test_an_app_made_in_the_admin_is_trusted_only_for_the_rights_it_names_right():
    trusted_for = ["Staff", " course_roles ", "everything"]

    assert sso.idp_trust({"trusted_for": trusted_for}).trusted_for == {"course_roles"}


def test_without_trust_the_claims_are_read_but_grant_nothing_and_are_named_for_the_log():
    rules = sso.SsoRules(
        staff_affiliations=frozenset({"staff"}),
        staff_groups=frozenset({STAFF_ENTITLEMENT}),
        group_roles=sso.parse_group_roles({INSTRUCTOR_GROUP: "cs101:instructor"}),
    )
    raw = {
        "eppn": "jdoe@example.edu",
        "eduPersonAffiliation": ["staff", "member"],
        "isMemberOf": [INSTRUCTOR_GROUP, "library-users"],
        "eduPersonEntitlement": [STAFF_ENTITLEMENT],
    }

    def person(*trusted_for: str) -> sso.Identity:
        trust = sso.IdpTrust(netid_scopes=frozenset({"example.edu"}), trusted_for=frozenset(trusted_for))
        return sso.identity_from_claims(sso.canonical_claims(raw), rules, trust)

    untrusted = person()
    assert not sso.is_staff_identity(untrusted, rules)
    assert sso.course_roles_from_groups(untrusted, rules) == {}
    assert sso.ignored_claims(untrusted, rules) == {
        "staff": ["staff", STAFF_ENTITLEMENT],
        "course_roles": [INSTRUCTOR_GROUP],
    }
    trusted = person("staff", "course_roles")
    assert sso.is_staff_identity(trusted, rules)
    assert sso.course_roles_from_groups(trusted, rules) == {"cs101": "instructor"}
    assert sso.ignored_claims(trusted, rules) == {}
