"""How portal.sso reads what an IdP sent: empty and repeated values, scoped affiliations, OIDC extra data,
group roles, and the cluster account check. Pure: no IdP, no database."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from portal import sso

RULES = sso.SsoRules(
    staff_affiliations=frozenset({"staff"}),
    group_roles=sso.parse_group_roles(
        {"a-cs101-tas": "cs101:ta", "b-cs101-students": "cs101:student", "z-cs102-teachers": "cs102:instructor"}
    ),
)
#: An IdP trusted for the rights its claims grant ("trusted_for"); tests/security/test_identity_idp_trust.py
#: covers one that is not.
TRUSTED = sso.IdpTrust(trusted_for=frozenset(sso.TRUSTS))
EPPN_OID = "urn:oid:1.3.6.1.4.1.5923.1.1.1.6"
SCOPED_AFFILIATION_OID = "urn:oid:1.3.6.1.4.1.5923.1.1.1.9"


def identity(raw: dict, rules: sso.SsoRules = RULES) -> sso.Identity:
    return sso.identity_from_claims(sso.canonical_claims(raw), rules, TRUSTED)


def test_null_and_empty_values_count_as_not_sent() -> None:
    person = identity({"eppn": "jdoe@example.edu", "mail": None, "givenName": ["", None, "Jane"], "sn": ""})

    assert (person.email, person.first_name, person.last_name) == ("", "Jane", "")
    assert "email" not in sso.canonical_claims({"mail": None})


@pytest.mark.parametrize("eppn", [None, "", [], ["", None]])
def test_an_empty_netid_claim_is_refused_as_missing(eppn) -> None:
    with pytest.raises(sso.IdentityRefused, match="exactly one"):
        identity({"eppn": eppn, "mail": "jdoe@example.edu"})


def test_a_netid_sent_under_its_oid_and_its_friendly_name_counts_once() -> None:
    person = identity({EPPN_OID: ["jdoe@example.edu"], "eduPersonPrincipalName": "jdoe@example.edu"})

    assert person.netid == "jdoe"


def test_two_different_netids_under_two_names_are_still_ambiguous() -> None:
    with pytest.raises(sso.IdentityRefused, match="exactly one"):
        identity({EPPN_OID: ["jdoe@example.edu"], "eppn": "jsmith@example.edu"})


def test_scoped_and_plain_affiliations_fold_into_one_lowercased_set() -> None:
    raw = {"eppn": "jdoe@example.edu", SCOPED_AFFILIATION_OID: ["Staff@example.edu", "member@example.edu"]}
    raw["eduPersonAffiliation"] = ["member", "staff"]

    claims = sso.canonical_claims(raw)
    person = sso.identity_from_claims(claims, RULES, TRUSTED)

    assert claims["affiliation"] == ["member", "staff"]
    assert claims["scoped_affiliation"] == ["Staff@example.edu", "member@example.edu"], "kept whole, to check its scope"
    assert person.affiliations == {"staff", "member"}
    assert sso.is_staff_identity(person, RULES)


def test_staff_affiliations_from_the_settings_match_whatever_their_case() -> None:
    settings = SimpleNamespace(
        LABQUEUE_NETID_ATTRIBUTE="eppn",
        LABQUEUE_NETID_PATTERN=sso.DEFAULT_NETID_PATTERN,
        LABQUEUE_STAFF_AFFILIATIONS=["Faculty"],
        LABQUEUE_STAFF_GROUPS=[],
        LABQUEUE_GROUP_ROLES={},
    )
    rules = sso.rules_from_settings(settings)

    person = identity({"eppn": "jdoe@example.edu", SCOPED_AFFILIATION_OID: "FACULTY@example.edu"}, rules)

    assert sso.is_staff_identity(person, rules)
    assert not sso.is_staff_identity(identity({"eppn": "jdoe@example.edu", "affiliation": "student"}, rules), rules)


@pytest.mark.parametrize(
    "extra_data",
    [
        {"sub": "42", "eduperson_principal_name": "jdoe@example.edu", "email": "jdoe@example.edu"},
        {"id_token": None, "userinfo": {}, "eduperson_principal_name": "jdoe@example.edu", "email": "jdoe@example.edu"},
    ],
    ids=["plain claims", "empty token and userinfo"],
)
def test_oidc_extra_data_without_tokens_is_read_as_the_claims_themselves(extra_data: dict) -> None:
    claims = sso.claims_from_extra_data("openid_connect", extra_data)

    person = sso.identity_from_claims(claims, RULES)

    assert (person.netid, person.email) == ("jdoe", "jdoe@example.edu")


def test_groups_the_settings_do_not_map_give_no_role() -> None:
    person = identity({"eppn": "jdoe@example.edu", "groups": ["library-users", "z-cs102-teachers"]})

    assert sso.course_roles_from_groups(person, RULES) == {"cs102": "instructor"}


@pytest.mark.parametrize(
    "groups",
    [["a-cs101-tas", "b-cs101-students"], ["b-cs101-students", "a-cs101-tas"]],
    ids=["higher role first", "lower role first"],
)
def test_the_highest_role_for_a_course_wins_whatever_the_order_of_the_groups(groups: list[str]) -> None:
    person = identity({"eppn": "jdoe@example.edu", "groups": groups})

    assert sso.course_roles_from_groups(person, RULES) == {"cs101": "ta"}


@pytest.mark.parametrize("target", ["cs101", ":ta", "cs101:", "cs101:TA"])
def test_a_group_mapping_without_a_course_or_a_known_role_is_a_configuration_error(target: str) -> None:
    with pytest.raises(ValueError, match="course-slug:role"):
        sso.parse_group_roles({"some-group": target})


def test_an_unknown_account_check_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="unknown account check 'ldap'"):
        sso.account_exists("root", "ldap")


def test_the_account_check_fails_closed_when_getent_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    assert sso.account_exists("root", "getent")

    monkeypatch.setenv("PATH", str(tmp_path))  # a host without getent

    assert not sso.account_exists("root", "getent")


def test_the_account_check_fails_closed_when_the_user_database_does_not_answer_in_time() -> None:
    assert not sso.account_exists("root", "getent", timeout=0.000001)
