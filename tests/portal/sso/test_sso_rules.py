"""The identity rules of portal.sso, without an IdP."""

import lxml.etree
import pytest
import xmlsec

from portal import models, sso

RULES = sso.SsoRules(
    staff_affiliations=frozenset({"staff"}),
    staff_groups=frozenset({"urn:example.edu:hpc-admins"}),
    group_roles=sso.parse_group_roles({"urn:example.edu:cs101:tas": "cs101:ta", "cs101-all": "cs101:student"}),
)
#: An IdP trusted for the rights its claims grant ("trusted_for").
TRUSTED = sso.IdpTrust(trusted_for=frozenset(sso.TRUSTS))

SAML_ATTRIBUTES = {
    "urn:oid:1.3.6.1.4.1.5923.1.1.1.6": ["JDoe@example.edu"],
    "urn:oid:0.9.2342.19200300.100.1.3": ["jdoe@example.edu"],
    "urn:oid:2.5.4.42": ["Jane"],
    "urn:oid:2.5.4.4": ["Doe"],
    "urn:oid:1.3.6.1.4.1.5923.1.1.1.9": ["staff@example.edu", "member@example.edu"],
    "urn:oid:1.3.6.1.4.1.5923.1.5.1.1": ["cs101-all", "urn:example.edu:cs101:tas"],
}


def test_saml_attributes_become_an_identity_with_a_lowercased_netid():
    identity = sso.identity_from_claims(sso.claims_from_extra_data("saml", SAML_ATTRIBUTES), RULES, TRUSTED)
    assert identity.netid == "jdoe" and identity.scoped_name == "JDoe@example.edu"
    assert (identity.email, identity.first_name, identity.last_name) == ("jdoe@example.edu", "Jane", "Doe")
    assert identity.affiliations == {"staff", "member"}
    assert sso.is_staff_identity(identity, RULES)
    assert sso.course_roles_from_groups(identity, RULES) == {"cs101": "ta"}, "the highest role wins"


def test_oidc_userinfo_claims_win_over_the_id_token():
    extra = {
        "id_token": {"sub": "1", "eduperson_principal_name": "old@example.edu"},
        "userinfo": {"sub": "1", "eduperson_principal_name": "jdoe@example.edu", "groups": ["x"]},
    }
    identity = sso.identity_from_claims(sso.claims_from_extra_data("openid_connect", extra), RULES, TRUSTED)
    assert identity.netid == "jdoe" and identity.groups == {"x"}
    assert not sso.is_staff_identity(identity, RULES)


@pytest.mark.parametrize(
    "eppn, reason",
    [
        ("jdoe@elsewhere.org", "not from a campus"),
        ("jdoe@example.edu.evil.org", "not from a campus"),
        ("j.doe@example.edu", "cannot be a cluster user name"),
        ("1jdoe@example.edu", "cannot be a cluster user name"),
        ("a" * 33 + "@example.edu", "cannot be a cluster user name"),
    ],
)
def test_identities_outside_the_scope_or_not_posix_are_refused(eppn, reason):
    with pytest.raises(sso.IdentityRefused, match=reason):
        sso.identity_from_claims({"eppn": [eppn]}, RULES)


def test_a_missing_or_ambiguous_netid_claim_is_refused():
    for claims in ({}, {"eppn": ["a@example.edu", "b@example.edu"]}):
        with pytest.raises(sso.IdentityRefused, match="exactly one"):
            sso.identity_from_claims(claims, RULES)


def test_the_netid_claim_and_pattern_are_configurable():
    rules = sso.SsoRules(netid_claim="uid", netid_pattern=r"^([a-z0-9]+)$")
    assert sso.identity_from_claims(sso.canonical_claims({"uid": "jdoe42"}), rules).netid == "jdoe42"


def test_a_group_mapping_with_an_unknown_role_is_a_configuration_error():
    with pytest.raises(ValueError, match="role"):
        sso.parse_group_roles({"g": "cs101:professor"})


def test_the_account_check_asks_getent_and_keeps_its_answer_out_of_the_portals_output(capfd):
    assert sso.account_exists("root", "getent")
    assert not sso.account_exists("no-such-user-here", "getent")
    assert sso.account_exists("no-such-user-here", "none")
    assert capfd.readouterr() == ("", ""), "no passwd line or getent message in the web server's log"


def test_the_posix_rule_is_the_same_as_the_user_model_s():
    assert sso.POSIX_NAME_RE.pattern == models.POSIX_NAME


def test_the_provider_settings_map_eppn_as_the_saml_uid():
    providers = sso.socialaccount_providers(
        saml=[{"id": "campus", "entity_id": "https://idp", "metadata_url": "https://idp/md"}],
        oidc=[{"id": "c", "server_url": "https://op", "client_id": "x", "secret": "y"}],
        netid_claim="eppn",
    )
    app = providers["saml"]["APPS"][0]
    assert app["client_id"] == "campus" and app["provider_id"] == "https://idp"
    assert app["settings"]["attribute_mapping"]["uid"][0] == "urn:oid:1.3.6.1.4.1.5923.1.1.1.6"
    assert app["settings"]["advanced"]["want_assertion_signed"] is True
    assert providers["openid_connect"]["APPS"][0]["settings"]["server_url"] == "https://op"


def test_xmlsec_and_lxml_use_the_same_libxml2():
    assert xmlsec.get_libxml_version() == lxml.etree.LIBXML_VERSION
