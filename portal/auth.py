"""Login glue for django-allauth. Accounts are provisioned (seed, roster, SSO), never self-made.

Local passwords are off unless the settings turn them on (the demo, or LABQUEUE_LOCAL_PASSWORDS):
`local_passwords_enabled` is the one switch, `PasswordGateBackend` makes every password fail while it
is off (the admin's login form included), and a password reset is never mailed for an account that
has no password of its own (a roster or SSO account), so an e-mail address is never a way in.

Campus SSO (SAML or OIDC) goes through `SocialAccountAdapter`:

1. `pre_social_login` reads the identity (portal.sso) under what the IdP may vouch for (its netid
   scopes), refuses people from outside the campus scope, netids the portal must never become
   (portal.identity) and people without a cluster account (each with its own page), links a first
   login to the person a roster or an admin already created with that netid (never to an account
   with staff or superuser rights: an operator links those), and re-applies the staff flag and
   IdP-group course roles on every login, each from the claims of an IdP trusted for it (its
   "trusted_for"): a claim of a right the IdP is not trusted for counts as not sent, and is logged.
2. For someone new, allauth signs them up: `populate_user` proposes username = netid and `save_user`
   sets the netid in its own field. allauth may rename the username when it is taken (``jdoe1``);
   the netid is never touched by that and is checked again after the save.
"""

from __future__ import annotations

import logging
import smtplib

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import render, resolve_url

from portal import sso
from portal.identity import netid_refusal
from portal.signals import sso_course_roles

log = logging.getLogger(__name__)

#: Session key remembering which SAML IdP (and NameID / session index) a person logged in through,
#: so logout can also end the IdP session (SAML single logout).
SAML_SESSION_KEY = "labqueue_saml_login"


def local_passwords_enabled() -> bool:
    """May anyone sign in, reset or change a password here? allauth's SOCIALACCOUNT_ONLY, which the settings
    derive from LABQUEUE_LOCAL_PASSWORDS / LABQUEUE_DEMO / LABQUEUE_SSO_ONLY, is the one switch: allauth's own
    views follow it too, so the two can never disagree."""
    return not settings.SOCIALACCOUNT_ONLY


class PasswordGateBackend(ModelBackend):
    """First in AUTHENTICATION_BACKENDS, a gate and nothing more: while local passwords are off, any password
    stops authentication outright (PermissionDenied ends Django's loop over the backends), whichever form sent it;
    while they are on, it passes (None) and allauth's backend, a ModelBackend too, checks the password."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if password is not None and not local_passwords_enabled():
            raise PermissionDenied
        return None


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return False

    def send_password_reset_mail(self, user, email: str, context: dict) -> None:
        """Only for an account that has a password of its own, and only while local passwords are on: a roster
        or SSO account has none, and whoever owns the e-mail address a roster gave it must not get one."""
        if not local_passwords_enabled() or not user.has_usable_password():
            log.warning("Password reset for %s (netid %s) not sent: no local password to reset", user, user.netid)
            return
        try:
            super().send_password_reset_mail(user, email, context)
        except (smtplib.SMTPException, OSError):
            log.exception("Password reset mail for %s could not be sent", user)
            messages.error(
                self.request,
                "The password-reset e-mail could not be sent: the portal's mail server did not take it. Try again "
                f"in a few minutes; if this keeps happening, contact {settings.LABQUEUE_SUPPORT_CONTACT}.",
            )

    def login(self, request: HttpRequest, user) -> None:
        super().login(request, user)
        saml_login = getattr(request, "_labqueue_saml_login", None)
        if saml_login:
            request.session[SAML_SESSION_KEY] = saml_login
        else:
            request.session.pop(SAML_SESSION_KEY, None)

    def get_logout_redirect_url(self, request: HttpRequest) -> str:
        """Runs before the logout: after a SAML login, go on to the IdP's single logout if it has one."""
        saml_login = request.session.get(SAML_SESSION_KEY) if request.user.is_authenticated else None
        return (saml_login and saml_logout_url(request, saml_login)) or super().get_logout_redirect_url(request)


def saml_logout_url(request: HttpRequest, saml_login: dict) -> str | None:
    """The IdP address that ends the campus session too (a SAML LogoutRequest), or None without SLO.

    allauth keeps no NameID or SessionIndex from the login, so the request names the person by the
    SAML uid the portal keyed the account on (the eppn by default).
    """
    from allauth.socialaccount.adapter import get_adapter
    from allauth.socialaccount.providers.saml.utils import build_auth

    try:
        provider = get_adapter().get_provider(request, "saml", client_id=saml_login["app"])
        auth = build_auth(request, provider)
    except Exception:  # the IdP was removed from the settings, or its metadata cannot be read now
        log.exception("SAML single logout skipped for %s", saml_login.get("app"))
        return None
    if not auth.get_settings().get_idp_slo_url():
        return None
    return auth.logout(
        return_to=request.build_absolute_uri(resolve_url(settings.ACCOUNT_LOGOUT_REDIRECT_URL)),
        name_id=saml_login["uid"],
    )


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request, sociallogin) -> bool:
        # Local signup is closed (AccountAdapter); an identity that passed pre_social_login may get an account.
        return True

    def populate_user(self, request, sociallogin, data):
        user = super().populate_user(request, sociallogin, data)
        try:
            identity = _identity(sociallogin)
        except sso.IdentityRefused:
            return user  # pre_social_login refuses it
        user.username = identity.netid
        user.netid = identity.netid
        user.email = identity.email or user.email
        user.first_name = identity.first_name or user.first_name
        user.last_name = identity.last_name or user.last_name
        return user

    def pre_social_login(self, request, sociallogin) -> None:
        identity = _admitted_identity(request, sociallogin)
        if not sociallogin.is_existing:
            _link_first_login(request, sociallogin, identity)
        if sociallogin.is_existing:
            _keep_account_current(sociallogin.user, identity, sociallogin.account.provider)
        _remember_saml_login(request, sociallogin)

    def save_user(self, request, sociallogin, form=None):
        identity = _identity(sociallogin)
        sociallogin.user.netid = identity.netid
        user = super().save_user(request, sociallogin, form)
        user.refresh_from_db()
        if user.netid != identity.netid:  # never expected: fail closed rather than run jobs as someone else
            raise _refused(request, "Your account could not be linked to your cluster user name.")
        _apply_identity(user, identity, sociallogin.account.provider)
        return user


def _admitted_identity(request: HttpRequest, sociallogin) -> sso.Identity:
    """The campus identity signing in, or the page that refuses it (ImmediateHttpResponse): from outside the
    campus scope, a netid the portal must never become, an account linked to another netid, no cluster account."""
    try:
        identity = _identity(sociallogin)
    except sso.IdentityRefused as refused:
        log.warning("SSO login refused (%s): %s", sociallogin.account.provider, refused.reason)
        raise _refused(request, refused.reason)
    if reason := netid_refusal(identity.netid):
        log.warning("SSO login refused (%s): %s (%s)", sociallogin.account.provider, reason, identity.scoped_name)
        raise _refused(request, reason)
    if sociallogin.is_existing and sociallogin.user.netid not in (None, identity.netid):
        log.error(
            "SSO identity %s maps to %s, but its account has netid %s",
            identity.scoped_name,
            identity.netid,
            sociallogin.user.netid,
        )
        raise _refused(
            request,
            "Your portal account is linked to a different cluster user name than your campus identity now "
            "gives. Ask the portal staff to check your account.",
        )
    if not sso.account_exists(identity.netid, settings.LABQUEUE_ACCOUNT_CHECK):
        log.info("SSO login of %s: no cluster account %s", identity.scoped_name, identity.netid)
        raise ImmediateHttpResponse(
            render(
                request,
                "portal/account_needed.html",
                {"identity": identity, "request_url": settings.LABQUEUE_ACCOUNT_REQUEST_URL},
                status=403,
            )
        )
    return identity


def _link_first_login(request: HttpRequest, sociallogin, identity: sso.Identity) -> None:
    """A first campus sign-in joins the account a roster or an admin already made with its netid, if any; never
    one with staff or superuser rights (the portal's operators link those)."""
    existing = get_user_model().objects.filter(netid=identity.netid).first()
    if existing is not None and (existing.is_staff or existing.is_superuser):
        log.warning(
            "SSO login refused (%s): %s would be a first link to %s, which has staff or superuser rights",
            sociallogin.account.provider,
            identity.scoped_name,
            existing.username,
        )
        raise _refused(
            request,
            f"The portal account for “{identity.netid}” has administrator rights, so a campus sign-in is "
            "linked to it only by the portal's operators. Ask them to link your campus identity.",
        )
    if existing is not None:
        sociallogin.connect(request, existing)  # a roster or admin created this person already


def _keep_account_current(user, identity: sso.Identity, provider: str) -> None:
    """An account's netid once it has none, then its staff flag and course roles, from this sign-in's identity."""
    if user.netid is None:
        user.netid = identity.netid
        user.save(update_fields=["netid"])
    _apply_identity(user, identity, provider)


def _refused(request: HttpRequest, reason: str) -> ImmediateHttpResponse:
    """The "sign-in refused" page (403) with a reason that is safe to show."""
    return ImmediateHttpResponse(render(request, "portal/sso_refused.html", {"reason": reason}, status=403))


def _identity(sociallogin) -> sso.Identity:
    provider = sociallogin.account.get_provider()
    claims = sso.claims_from_extra_data(provider.id, sociallogin.account.extra_data or {})  # "saml" or "openid_connect"
    trust = sso.idp_trust(provider.app.settings)
    return sso.identity_from_claims(claims, sso.rules_from_settings(settings), trust)


def _apply_identity(user, identity: sso.Identity, provider: str) -> None:
    """Staff flag and IdP-group course roles, on every SSO login, from what the IdP is trusted for: a claim of
    a right it is not trusted for grants nothing (so the staff flag is cleared) and is logged."""
    rules = sso.rules_from_settings(settings)
    for right, claims in sso.ignored_claims(identity, rules).items():
        log.warning(
            "SSO claims ignored (%s): %s sent %s, but this IdP is not trusted for %s",
            provider,
            identity.scoped_name,
            ", ".join(claims),
            right,
        )
    if (rules.staff_affiliations or rules.staff_groups) and not user.is_superuser:
        is_staff = sso.is_staff_identity(identity, rules)
        if user.is_staff != is_staff:
            user.is_staff = is_staff
            user.save(update_fields=["is_staff"])
    course_roles = sso.course_roles_from_groups(identity, rules)
    if course_roles:
        sso_course_roles.send(sender=SocialAccountAdapter, user=user, course_roles=course_roles)


def _remember_saml_login(request, sociallogin) -> None:
    """AccountAdapter.login puts this in the new session, for single logout."""
    provider = sociallogin.account.get_provider()
    if provider.id == "saml":
        request._labqueue_saml_login = {"app": provider.app.client_id, "uid": sociallogin.account.uid}
