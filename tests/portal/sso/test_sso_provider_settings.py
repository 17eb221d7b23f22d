"""allauth's provider settings built from LABQUEUE_SAML_IDPS / LABQUEUE_OIDC_PROVIDERS items (portal.sso). Pure."""

from __future__ import annotations

from portal import sso

SAML_BY_HAND = {
    "id": "campus",
    "entity_id": "https://idp.example.edu/idp/shibboleth",
    "sso_url": "https://idp.example.edu/idp/profile/SAML2/Redirect/SSO",
    "x509cert": "MIIC...",
}


def test_a_saml_idp_without_single_logout_gets_no_slo_address() -> None:
    app = sso.saml_app(SAML_BY_HAND, "eppn")

    assert app["settings"]["idp"] == {
        "entity_id": "https://idp.example.edu/idp/shibboleth",
        "sso_url": "https://idp.example.edu/idp/profile/SAML2/Redirect/SSO",
        "x509cert": "MIIC...",
    }
    assert "sp" not in app["settings"], "the portal's own metadata address is the SP entity id"
    assert app["name"] == "Campus login"


def test_a_saml_idp_given_by_its_metadata_address_is_read_from_there() -> None:
    idp = {"id": "campus", "entity_id": "https://idp.example.edu/idp/shibboleth", "metadata_url": "https://idp/md"}

    app = sso.saml_app(idp, "eppn")

    assert app["settings"]["idp"] == {
        "entity_id": "https://idp.example.edu/idp/shibboleth",
        "metadata_url": "https://idp/md",
    }


def test_a_saml_idp_with_single_logout_and_its_own_sp_entity_id_keeps_both() -> None:
    idp = {
        **SAML_BY_HAND,
        "name": "Example University",
        "slo_url": "https://idp.example.edu/idp/profile/SAML2/Redirect/SLO",
        "sp_entity_id": "https://labqueue.example.edu/saml",
    }

    app = sso.saml_app(idp, "eppn")

    assert app["settings"]["idp"]["slo_url"] == "https://idp.example.edu/idp/profile/SAML2/Redirect/SLO"
    assert app["settings"]["sp"] == {"entity_id": "https://labqueue.example.edu/saml"}
    assert (app["name"], app["client_id"], app["provider_id"]) == (
        "Example University",
        "campus",
        "https://idp.example.edu/idp/shibboleth",
    )


def test_a_sites_own_advanced_options_and_attribute_mapping_are_kept_beside_the_secure_defaults() -> None:
    idp = {**SAML_BY_HAND, "advanced": {"authn_request_signed": True}, "attribute_mapping": {"uid": ["employeeID"]}}

    settings = sso.saml_app(idp, "eppn")["settings"]

    assert settings["advanced"] == {
        "want_assertion_signed": True,
        "reject_idp_initiated_sso": True,
        "allow_single_label_domains": True,
        "authn_request_signed": True,
    }
    assert settings["attribute_mapping"] == {"uid": ["employeeID"]}


def test_the_saml_uid_follows_the_configured_netid_claim() -> None:
    assert sso.saml_attribute_mapping("uid")["uid"] == ["urn:oid:0.9.2342.19200300.100.1.1", "uid"]
    assert sso.saml_attribute_mapping("employeeNumber")["uid"] == ["employeeNumber"]


def test_an_oidc_provider_gets_safe_defaults() -> None:
    app = sso.oidc_app({"id": "campus-oidc", "server_url": "https://op.example.edu", "client_id": "labqueue"})

    assert app["settings"] == {"server_url": "https://op.example.edu", "uid_field": "sub", "oauth_pkce_enabled": True}
    assert (app["name"], app["secret"]) == ("Campus login", "")


def test_an_oidc_providers_scope_token_auth_method_and_pkce_choice_reach_allauth() -> None:
    app = sso.oidc_app(
        {
            "id": "campus-oidc",
            "server_url": "https://op.example.edu",
            "client_id": "labqueue",
            "secret": "s3cret",
            "scope": ["openid", "profile", "email", "eduperson"],
            "token_auth_method": "client_secret_post",
            "pkce": False,
            "uid_field": "eppn",
        }
    )

    assert app["settings"] == {
        "server_url": "https://op.example.edu",
        "uid_field": "eppn",
        "oauth_pkce_enabled": False,
        "scope": ["openid", "profile", "email", "eduperson"],
        "token_auth_method": "client_secret_post",
    }
    assert app["secret"] == "s3cret"


def test_an_oidc_provider_is_shown_under_its_own_name() -> None:
    app = sso.oidc_app({"id": "c", "name": "Example University", "server_url": "https://op", "client_id": "x"})

    assert app["name"] == "Example University"


def test_no_idps_configured_means_no_apps() -> None:
    providers = sso.socialaccount_providers(saml=[], oidc=[], netid_claim="eppn")

    assert providers == {"saml": {"APPS": []}, "openid_connect": {"APPS": [], "OAUTH_PKCE_ENABLED": True}}
