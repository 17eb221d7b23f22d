"""A tiny OpenID Connect provider (django-allauth's allauth.idp.oidc) for the portal's SSO tests."""

import os

from common_settings import *  # noqa: F403

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "allauth",
    "allauth.account",
    "allauth.idp.oidc",
]
MIDDLEWARE = [*MIDDLEWARE, "allauth.account.middleware.AccountMiddleware"]  # noqa: F405
ROOT_URLCONF = "oidc_idp.urls"
AUTHENTICATION_BACKENDS = ["allauth.account.auth_backends.AuthenticationBackend"]
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "password1*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_RATE_LIMITS = False
SESSION_COOKIE_NAME = "oidc_idp_session"
CSRF_COOKIE_NAME = "oidc_idp_csrftoken"
IDP_OIDC_PRIVATE_KEY = open(os.environ["IDP_OIDC_PRIVATE_KEY_FILE"]).read()
IDP_OIDC_ADAPTER = "oidc_idp.adapter.CampusOIDCAdapter"
