"""What an IdP may vouch for (portal.sso.IdpTrust), without an IdP: netid scopes, e-mail verification and
scoped affiliations, and how they reach allauth's app settings from LABQUEUE_SAML_IDPS /
LABQUEUE_OIDC_PROVIDERS. Pure: no database."""

import pytest

from portal import sso

RULES = sso.SsoRules(staff_affiliations=frozenset({"staff"}))
#: The campus IdP: its names in example.edu, trusted for staff (so "not staff" below is the scope rule's doing).
CAMPUS = sso.IdpTrust(netid_scopes=frozenset({"example.edu"}), trusted_for=frozenset({"staff"}))


def identity(raw: dict, trust: sso.IdpTrust = CAMPUS, rules: sso.SsoRules = RULES) -> sso.Identity:
    return sso.identity_from_claims(sso.canonical_claims(raw), rules, trust)


def test_a_name_in_the_idps_scope_is_accepted_whatever_its_case():
    assert (
        identity({"eppn": "JDoe@Example.EDU"}, rules=sso.SsoRules(netid_pattern=r"(?i)^([^@]+)@example\.edu$")).netid
        == "jdoe"
    )


def test_a_name_outside_the_idps_scopes_is_refused_even_when_the_campus_pattern_allows_it():
    rules = sso.SsoRules(netid_pattern=r"^([^@]+)@(?:example\.edu|partner\.example\.org)$")
    partner = sso.IdpTrust(netid_scopes=frozenset({"partner.example.org"}))

    assert identity({"eppn": "jdoe@partner.example.org"}, partner, rules).netid == "jdoe"
    with pytest.raises(sso.IdentityRefused, match="may not vouch for “root@example.edu”"):
        identity({"eppn": "root@example.edu"}, partner, rules)


def test_a_name_with_more_than_one_at_sign_is_in_no_scope_even_when_the_campus_pattern_allows_it():
    lax = sso.SsoRules(netid_pattern=r"([^@]+)@.+")

    assert identity({"eppn": "jdoe@example.edu"}, rules=lax).netid == "jdoe"
    for name in ("jdoe@partner.example.org@example.edu", "jdoe@example.edu@partner.example.org"):
        with pytest.raises(sso.IdentityRefused, match="may not vouch"):
            identity({"eppn": name}, rules=lax)


def test_an_unscoped_netid_claim_is_refused_by_an_idp_bound_to_scopes():
    rules = sso.SsoRules(netid_claim="uid", netid_pattern=r"^([a-z0-9]+)$")

    assert identity({"uid": "jdoe"}, sso.IdpTrust(), rules).netid == "jdoe", "no scopes: the pattern alone"
    with pytest.raises(sso.IdentityRefused, match="may not vouch for “jdoe”"):
        identity({"uid": "jdoe"}, CAMPUS, rules)


@pytest.mark.parametrize("claim", ["email", "mail", "urn:oid:0.9.2342.19200300.100.1.3"])
@pytest.mark.parametrize(
    "verified, accepted",
    [
        (None, False),
        ("false", False),
        (False, False),
        ("no", False),
        (["true", "false"], False),
        (True, True),
        ("true", True),
        # The spellings allauth's own SAML provider takes as true, in any case and with spaces around.
        (" TRUE ", True),
        ("1", True),
        ("Yes", True),
        ("t", True),
        ("Y", True),
    ],
)
def test_a_netid_from_any_name_of_the_email_claim_needs_one_true_email_verified(claim, verified, accepted):
    rules = sso.SsoRules(netid_claim=claim)
    raw = {"mail": "jdoe@example.edu"} | ({} if verified is None else {"email_verified": verified})

    if accepted:
        assert identity(raw, rules=rules).netid == "jdoe"
    else:
        with pytest.raises(sso.IdentityRefused, match="did not confirm that your e-mail address is verified"):
            identity(raw, rules=rules)


def test_an_idp_whose_settings_vouch_for_its_mail_needs_no_email_verified_claim():
    trust = sso.IdpTrust(netid_scopes=frozenset({"example.edu"}), email_verified=True)

    assert identity({"mail": "jdoe@example.edu"}, trust, sso.SsoRules(netid_claim="email")).netid == "jdoe"


def test_an_eppn_needs_no_email_verification():
    assert identity({"eppn": "jdoe@example.edu", "email_verified": "false"}).netid == "jdoe"


@pytest.mark.parametrize(
    "trust, counted",
    [
        (CAMPUS, {"staff@example.edu"}),
        (sso.IdpTrust(), {"staff@example.edu"}),  # no scopes set: the scope of the eppn it asserted
        (
            sso.IdpTrust(netid_scopes=frozenset({"example.edu", "med.example.edu"})),
            {"staff@example.edu", "staff@med.example.edu"},
        ),
    ],
)
def test_a_scoped_affiliation_counts_only_in_a_scope_the_idp_may_assert(trust, counted):
    offered = [
        "staff@example.edu",
        "staff@med.example.edu",
        "staff@other.org",
        "staff@",
        "@example.edu",
        "staff",
        "staff@med@example.edu",
    ]

    def affiliations(value: str) -> frozenset[str]:
        return identity({"eppn": "jdoe@example.edu", "eduPersonScopedAffiliation": [value]}, trust).affiliations

    assert {value for value in offered if affiliations(value) == {"staff"}} == counted
    assert {value for value in offered if affiliations(value)} == counted, "nothing else counts as anything"


def test_staff_at_another_organisation_is_not_staff():
    person = identity(
        {"eppn": "jdoe@example.edu", "eduPersonScopedAffiliation": ["staff@other.org", "member@example.edu"]}
    )

    assert person.affiliations == {"member"}
    assert not sso.is_staff_identity(person, RULES)


def test_without_scopes_or_a_scoped_netid_no_scoped_affiliation_counts():
    rules = sso.SsoRules(netid_claim="uid", netid_pattern=r"^([a-z0-9]+)$", staff_affiliations=frozenset({"staff"}))
    person = identity(
        {
            "uid": "jdoe",
            "eduPersonScopedAffiliation": ["staff@example.edu", "staff", "staff@"],
            "affiliation": "member",
        },
        sso.IdpTrust(),
        rules,
    )

    assert person.affiliations == {"member"}


@pytest.mark.parametrize(
    "item, trust",
    [
        ({}, sso.IdpTrust()),
        ({"netid_scopes": "Example.EDU"}, sso.IdpTrust(netid_scopes=frozenset({"example.edu"}))),
        (
            {"netid_scopes": ["@example.edu", " med.example.edu ", ""], "email_verified": True},
            sso.IdpTrust(netid_scopes=frozenset({"example.edu", "med.example.edu"}), email_verified=True),
        ),
    ],
)
def test_what_an_idp_may_vouch_for_travels_in_its_allauth_app_settings(item, trust):
    saml = sso.saml_app({"id": "campus", "entity_id": "https://idp", "metadata_url": "https://idp/md", **item}, "eppn")
    oidc = sso.oidc_app({"id": "c", "server_url": "https://op", "client_id": "x", **item})

    assert sso.idp_trust(saml["settings"]) == trust
    assert sso.idp_trust(oidc["settings"]) == trust


# --- what each refusal says, and names read in every form a campus may configure ------------------------


@pytest.mark.parametrize(
    "raw, rules, reason",
    [
        (
            {"eppn": "jdoe@elsewhere.org"},
            sso.SsoRules(),
            "Your campus identity is not from a campus this portal serves.",
        ),
        (
            {"eppn": ["jdoe@example.edu", "jd@example.edu"]},
            sso.SsoRules(),
            "Your identity provider did not send exactly one “eppn” value, which the portal needs to find your "
            "cluster account.",
        ),
        (
            {"mail": "jdoe@example.edu"},
            sso.SsoRules(netid_claim="email"),
            "Your identity provider did not confirm that your e-mail address is verified, and the portal finds "
            "your cluster account from it.",
        ),
    ],
)
def test_each_refusal_says_what_the_identity_lacked_in_full(raw, rules, reason):
    with pytest.raises(sso.IdentityRefused) as refused:
        identity(raw, rules=rules)

    assert refused.value.reason == reason


def test_a_claim_the_oidc_provider_sends_only_in_the_id_token_is_read():
    extra = {
        "id_token": {"sub": "1", "eduperson_principal_name": "jdoe@example.edu", "given_name": "Jane"},
        "userinfo": {"sub": "1", "email": "jdoe@example.edu"},
    }

    person = sso.identity_from_claims(sso.claims_from_extra_data("openid_connect", extra), RULES, CAMPUS)

    assert (person.netid, person.first_name, person.email) == ("jdoe", "Jane", "jdoe@example.edu")


def test_a_netid_claim_of_the_campus_own_naming_is_read_as_configured():
    rules = sso.SsoRules(netid_claim="employeeNumber", netid_pattern=r"[a-z]+[0-9]*")

    person = identity({"employeeNumber": "jdoe7"}, sso.IdpTrust(), rules)

    assert person.netid == "jdoe7", "a pattern without a group: the whole value is the netid"


def test_a_netid_claim_named_in_another_case_is_its_usual_claim():
    rules = sso.SsoRules(netid_claim="EPPN")

    assert identity({"eduPersonPrincipalName": "jdoe@example.edu"}, rules=rules).netid == "jdoe"


def test_a_scope_is_configured_in_any_case_with_or_without_its_at_sign():
    trust = sso.idp_trust({"netid_scopes": ["@Xavier.edu", "EXAMPLE.edu"]})

    assert trust.netid_scopes == {"xavier.edu", "example.edu"}


def test_a_name_with_two_at_signs_brings_no_affiliation_from_an_idp_without_scopes():
    lax = sso.SsoRules(netid_pattern=r"([^@]+)@.+", staff_affiliations=frozenset({"staff"}))

    with pytest.raises(sso.IdentityRefused):
        identity({"eppn": "jdoe@x@example.edu", "eduPersonScopedAffiliation": "staff@x@example.edu"}, CAMPUS, lax)
    person = identity(
        {"eppn": "jdoe@x@example.edu", "eduPersonScopedAffiliation": "staff@x@example.edu"}, sso.IdpTrust(), lax
    )
    assert person.affiliations == set() and not sso.is_staff_identity(person, lax)


def test_group_roles_map_each_group_to_a_course_and_role():
    assert sso.parse_group_roles({"cs101-tas": "cs101:ta", "cs101-staff": "cs101:instructor"}) == {
        "cs101-tas": ("cs101", "ta"),
        "cs101-staff": ("cs101", "instructor"),
    }


@pytest.mark.parametrize("target", ["cs101:ta:ta", ":ta", "cs101", "cs101-ta"])
def test_a_group_role_that_is_not_one_course_and_one_role_is_a_configuration_error(target):
    with pytest.raises(ValueError, match=f"want 'course-slug:role' with a role in .*, got '{target}'"):
        sso.parse_group_roles({"g": target})
