"""A tiny SAML 2.0 IdP (djangosaml2idp2 on pysaml2, signing with xmlsec1) for the portal's SSO tests."""

import os

import saml2
from common_settings import *  # noqa: F403
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NAMEID_FORMAT_UNSPECIFIED

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "djangosaml2idp",
    "saml_idp",
]
ROOT_URLCONF = "saml_idp.urls"
LOGIN_URL = "/login/"
SESSION_COOKIE_NAME = "saml_idp_session"
CSRF_COOKIE_NAME = "saml_idp_csrftoken"
SAML_IDP_SPCONFIG = {}
SAML_IDP_CONFIG = {
    "debug": False,
    "xmlsec_binary": "/usr/bin/xmlsec1",
    "entityid": f"{BASE_URL}/idp/metadata/",  # noqa: F405
    "description": "LabQueue test SAML IdP",
    "service": {
        "idp": {
            "name": "Example University (test SAML IdP)",
            "endpoints": {
                "single_sign_on_service": [
                    (f"{BASE_URL}/idp/sso/post/", saml2.BINDING_HTTP_POST),  # noqa: F405
                    (f"{BASE_URL}/idp/sso/redirect/", saml2.BINDING_HTTP_REDIRECT),  # noqa: F405
                ],
                "single_logout_service": [
                    (f"{BASE_URL}/idp/slo/post/", saml2.BINDING_HTTP_POST),  # noqa: F405
                    (f"{BASE_URL}/idp/slo/redirect/", saml2.BINDING_HTTP_REDIRECT),  # noqa: F405
                ],
            },
            "name_id_format": [NAMEID_FORMAT_UNSPECIFIED, NAMEID_FORMAT_EMAILADDRESS],
            "sign_response": True,
            "sign_assertion": True,
            "want_authn_requests_signed": False,
            "signing_algorithm": saml2.xmldsig.SIG_RSA_SHA256,  # also for logout responses: SHA-1 is refused
            "digest_algorithm": saml2.xmldsig.DIGEST_SHA256,
            "policy": {"default": {"lifetime": {"minutes": 15}, "name_form": saml2.saml.NAME_FORMAT_URI}},
        }
    },
    "metadata": {"local": []},
    "key_file": os.environ["IDP_SAML_KEY_FILE"],
    "cert_file": os.environ["IDP_SAML_CERT_FILE"],
    "encryption_keypairs": [
        {"key_file": os.environ["IDP_SAML_KEY_FILE"], "cert_file": os.environ["IDP_SAML_CERT_FILE"]}
    ],
    "valid_for": 24,
}
SAML_AUTHN_SIGN_ALG = saml2.xmldsig.SIG_RSA_SHA256
SAML_AUTHN_DIGEST_ALG = saml2.xmldsig.DIGEST_SHA256
