"""Campus SSO: from what an identity provider says to who the person is on the cluster.

Pure functions (plus `account_exists`, which asks the system's user database), so the rules can be
unit-tested without an IdP: the adapters in portal/auth.py call them during a login.

- Claims from SAML attributes (OIDs or friendly names) and OIDC claims are folded into one
  vocabulary (`eppn`, `uid`, `email`, `given_name`, `family_name`, `affiliation`, `groups`).
- The netid comes from one configured claim (eppn by default) through a pattern whose first group
  is the name, e.g. ``^([^@]+)@example\\.edu$``; it is lowercased and must be a POSIX user name.
  Anything else is refused: the portal never guesses a cluster account.
- Each IdP vouches only for what its settings let it (`IdpTrust`): the scopes of the names it may
  assert (``"netid_scopes": ["example.edu"]``: a second IdP cannot assert ``root@example.edu``), and
  whether its e-mail claims count as verified. A netid taken from an e-mail claim needs the IdP to say
  the address is verified (``email_verified``). An eduPersonScopedAffiliation counts only in a scope
  the IdP may assert (so ``staff@other.org`` is not staff).
- A claim that grants a right counts only from an IdP trusted for that right (``"trusted_for"``, default:
  nothing): ``"staff"`` for the affiliations and groups that make operations staff, ``"course_roles"`` for the
  groups of LABQUEUE_GROUP_ROLES. From any other IdP it is ignored (`ignored_claims` says which, for the log),
  and the sign-in goes on without the right.
- The provider settings for allauth are built from a small JSON description per IdP
  (see .env.example), so settings.py stays declarative.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: Each canonical claim and the names IdPs use for it (SAML OIDs, friendly names, OIDC claims).
CLAIM_ALIASES: dict[str, tuple[str, ...]] = {
    "eppn": ("urn:oid:1.3.6.1.4.1.5923.1.1.1.6", "eduPersonPrincipalName", "eppn", "eduperson_principal_name"),
    "uid": ("urn:oid:0.9.2342.19200300.100.1.1", "uid"),
    "email": ("urn:oid:0.9.2342.19200300.100.1.3", "mail", "email"),
    "given_name": ("urn:oid:2.5.4.42", "givenName", "given_name"),
    "family_name": ("urn:oid:2.5.4.4", "sn", "surname", "family_name"),
    "email_verified": ("email_verified", "http://schemas.auth0.com/email_verified"),
    # eduPersonAffiliation
    "affiliation": ("urn:oid:1.3.6.1.4.1.5923.1.1.1.1", "eduPersonAffiliation", "eduperson_affiliation"),
    # eduPersonScopedAffiliation: member@example.edu, kept whole so that its scope can be checked
    "scoped_affiliation": (
        "urn:oid:1.3.6.1.4.1.5923.1.1.1.9",
        "eduPersonScopedAffiliation",
        "eduperson_scoped_affiliation",
    ),
    "groups": (
        # isMemberOf
        "urn:oid:1.3.6.1.4.1.5923.1.5.1.1",
        "isMemberOf",
        "groups",
        "is_member_of",
        # eduPersonEntitlement
        "urn:oid:1.3.6.1.4.1.5923.1.1.1.7",
        "eduPersonEntitlement",
        "eduperson_entitlement",
    ),
}
_ALIAS_TO_CLAIM = {alias.lower(): name for name, aliases in CLAIM_ALIASES.items() for alias in aliases}

DEFAULT_NETID_PATTERN = r"^([^@]+)@example\.edu$"
#: The same rule as portal.models.POSIX_NAME (settings.py imports this module, so it cannot import models).
POSIX_NAME_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
ROLES = ("student", "ta", "instructor")
ROLE_RANK = {role: rank for rank, role in enumerate(ROLES)}
#: The rights an IdP's claims may grant when its ``"trusted_for"`` names them: the staff flag (eduPersonAffiliation,
#: eduPersonScopedAffiliation, isMemberOf, eduPersonEntitlement or an OIDC groups claim named in
#: LABQUEUE_STAFF_AFFILIATIONS / LABQUEUE_STAFF_GROUPS) and course roles (the groups of LABQUEUE_GROUP_ROLES).
TRUSTS = ("staff", "course_roles")


class IdentityRefused(Exception):
    """The IdP vouched for someone the portal will not let in; `reason` is safe to show."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SsoRules:
    """How to read an identity. Built from settings when a login runs (see `rules_from_settings`)."""

    netid_claim: str = "eppn"
    netid_pattern: str = DEFAULT_NETID_PATTERN
    staff_affiliations: frozenset[str] = frozenset()
    staff_groups: frozenset[str] = frozenset()
    #: IdP group or entitlement value -> (course slug, role)
    group_roles: Mapping[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class IdpTrust:
    """What one IdP may vouch for, from its entry in LABQUEUE_SAML_IDPS / LABQUEUE_OIDC_PROVIDERS."""

    #: The scopes (``x@scope``) of the netid claims it may assert, lowercased; empty: whatever the pattern allows.
    netid_scopes: frozenset[str] = frozenset()
    #: Its e-mail claims are verified even without an ``email_verified`` claim (a SAML IdP's campus mail).
    email_verified: bool = False
    #: The rights (of TRUSTS) its claims may grant; empty: it says who someone is, and nothing more.
    trusted_for: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Identity:
    netid: str
    scoped_name: str
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    affiliations: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    #: The rights the IdP that vouched for this identity is trusted to grant (IdpTrust.trusted_for).
    trusted_for: frozenset[str] = frozenset()


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple, set, frozenset)):
        return [str(item) for item in value if item is not None and str(item) != ""]
    return [str(value)] if str(value) != "" else []


def canonical_claims(raw: Mapping[str, object]) -> dict[str, list[str]]:
    """Fold raw attributes or claims into the canonical names; unknown names are kept as they are."""
    claims: dict[str, list[str]] = {}
    for key, value in raw.items():
        name = _ALIAS_TO_CLAIM.get(str(key).lower(), str(key))
        values = _as_list(value)
        for item in values:
            if item not in claims.setdefault(name, []):
                claims[name].append(item)
    return claims


def claims_from_extra_data(provider: str, extra_data: Mapping) -> dict[str, list[str]]:
    """The canonical claims in a social account's `extra_data` (SAML: attributes; OIDC: tokens)."""
    if provider == "openid_connect":
        merged = {**(extra_data.get("id_token") or {}), **(extra_data.get("userinfo") or {})}
        if not merged:
            merged = dict(extra_data)
        return canonical_claims(merged)
    return canonical_claims(extra_data)


def netid_from(value: str, pattern: str) -> str:
    """The cluster user name in `value` (e.g. an eppn), or IdentityRefused."""
    match = re.fullmatch(pattern, value.strip()) if value else None
    if not match:
        raise IdentityRefused("Your campus identity is not from a campus this portal serves.")
    name = match.group(1) if match.groups() else match.group(0)
    netid = name.lower() if name.isascii() else name  # "\u212a" (the Kelvin sign) lowercases to "k"
    if not POSIX_NAME_RE.fullmatch(netid):
        raise IdentityRefused(f"“{netid}” cannot be a cluster user name, so the portal cannot run jobs as you.")
    return netid


def _scope(value: str) -> str:
    """The scope of ``name@scope`` (lowercased), or "" for a value without exactly one "@" between a name and
    a scope: "jdoe@partner.org@example.edu" is in no scope, whichever end an IdP's trust would be read from."""
    name, at, scope = value.strip().partition("@")
    return scope.lower() if name and at and scope and "@" not in scope else ""


def _is_true(values: list[str]) -> bool:
    return len(values) == 1 and values[0].strip().lower() in {"true", "1", "yes", "t", "y"}


def identity_from_claims(claims: Mapping[str, list[str]], rules: SsoRules, trust: IdpTrust = IdpTrust()) -> Identity:
    netid_claim = _ALIAS_TO_CLAIM.get(rules.netid_claim.lower(), rules.netid_claim)  # "mail" is the "email" claim
    values = claims.get(netid_claim) or []
    if len(values) != 1:
        raise IdentityRefused(
            "Your identity provider did not send exactly one "
            f"“{rules.netid_claim}” value, which the portal needs to find your cluster account."
        )
    scoped_name = values[0]
    netid = netid_from(scoped_name, rules.netid_pattern)
    scope = _scope(scoped_name)
    if trust.netid_scopes and scope not in trust.netid_scopes:
        raise IdentityRefused(f"This sign-in service may not vouch for “{scoped_name}”. Use your own campus sign-in.")
    if netid_claim == "email" and not (trust.email_verified or _is_true(claims.get("email_verified", []))):
        raise IdentityRefused(
            "Your identity provider did not confirm that your e-mail address is verified, and the portal finds "
            "your cluster account from it."
        )
    # A scoped affiliation counts in the scopes the IdP may assert, or else in the scope of the name it asserted.
    affiliation_scopes = trust.netid_scopes or {scope} - {""}
    scoped_affiliations = [
        item.rpartition("@")[0] for item in claims.get("scoped_affiliation", []) if _scope(item) in affiliation_scopes
    ]
    first = lambda name: (claims.get(name) or [""])[0]  # noqa: E731
    return Identity(
        netid=netid,
        scoped_name=scoped_name,
        email=first("email"),
        first_name=first("given_name"),
        last_name=first("family_name"),
        affiliations=frozenset(item.lower() for item in [*claims.get("affiliation", []), *scoped_affiliations]),
        groups=frozenset(claims.get("groups", [])),
        trusted_for=trust.trusted_for,
    )


def _staff_claims(identity: Identity, rules: SsoRules) -> list[str]:
    """The affiliations and groups of `identity` that the settings say make operations staff."""
    return sorted(identity.affiliations & rules.staff_affiliations) + sorted(identity.groups & rules.staff_groups)


def _role_groups(identity: Identity, rules: SsoRules) -> list[str]:
    """The groups of `identity` that the settings map to a course role."""
    return sorted(identity.groups & rules.group_roles.keys())


def is_staff_identity(identity: Identity, rules: SsoRules) -> bool:
    """Operations staff: an affiliation or group that the settings name, from an IdP trusted for "staff"."""
    return "staff" in identity.trusted_for and bool(_staff_claims(identity, rules))


def course_roles_from_groups(identity: Identity, rules: SsoRules) -> dict[str, str]:
    """Course slug -> role from the IdP groups, from an IdP trusted for "course_roles" (else none); the highest
    role wins when several groups map to a course."""
    if "course_roles" not in identity.trusted_for:
        return {}
    roles: dict[str, str] = {}
    for group in _role_groups(identity, rules):
        slug, role = rules.group_roles[group]
        if slug not in roles or ROLE_RANK[role] > ROLE_RANK[roles[slug]]:
            roles[slug] = role
    return roles


def parse_group_roles(raw: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """{"<group>": "<course slug>:<role>"} -> {"<group>": (slug, role)}, checking each role."""
    parsed: dict[str, tuple[str, str]] = {}
    for group, target in raw.items():
        slug, _, role = str(target).partition(":")
        if not slug or role not in ROLES:
            raise ValueError(f"group mapping {group!r}: want 'course-slug:role' with a role in {ROLES}, got {target!r}")
        parsed[group] = (slug, role)
    return parsed


def ignored_claims(identity: Identity, rules: SsoRules) -> dict[str, list[str]]:
    """Right -> the claims that would have granted it, for each right the IdP is not trusted for: these grant
    nothing (is_staff_identity, course_roles_from_groups), and the login says so in the log."""
    wanted = {"staff": _staff_claims(identity, rules), "course_roles": _role_groups(identity, rules)}
    return {right: claims for right, claims in wanted.items() if claims and right not in identity.trusted_for}


def parse_trusted_for(value: object) -> list[str]:
    """An IdP entry's ``"trusted_for"`` (a right of TRUSTS or a list of them), checked: a misspelt right must
    stop the start, not silently trust the IdP for less (or, read loosely, for more) than the operator meant."""
    rights = [str(item).strip() for item in _as_list(value)]
    unknown = [right for right in rights if right not in TRUSTS]
    if unknown:
        raise ValueError(f"trusted_for: unknown {unknown!r}; an IdP may be trusted for {list(TRUSTS)}")
    return sorted(set(rights))


def rules_from_settings(settings) -> SsoRules:
    return SsoRules(
        netid_claim=settings.LABQUEUE_NETID_ATTRIBUTE,
        netid_pattern=settings.LABQUEUE_NETID_PATTERN,
        staff_affiliations=frozenset(item.lower() for item in settings.LABQUEUE_STAFF_AFFILIATIONS),
        staff_groups=frozenset(settings.LABQUEUE_STAFF_GROUPS),
        group_roles=parse_group_roles(settings.LABQUEUE_GROUP_ROLES),
    )


def idp_trust(app_settings: Mapping) -> IdpTrust:
    """The IdpTrust that `saml_app` / `oidc_app` stored in an allauth app's settings."""
    scopes = (str(scope).strip().lstrip("@").lower() for scope in _as_list(app_settings.get("netid_scopes")))
    return IdpTrust(
        netid_scopes=frozenset(scope for scope in scopes if scope),
        email_verified=bool(app_settings.get("email_verified", False)),
        # Checked when the settings were built; an app made in the admin keeps only the rights it names right.
        trusted_for=frozenset(str(item).strip() for item in _as_list(app_settings.get("trusted_for"))) & set(TRUSTS),
    )


def account_exists(netid: str, check: str, timeout: float = 10) -> bool:
    """Does the cluster know this user? "getent": ask `getent passwd`; "none": assume yes."""
    if check == "none":
        return True
    if check == "getent":
        try:
            result = subprocess.run(["getent", "passwd", netid], capture_output=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return result.returncode == 0
    raise ValueError(f"unknown account check {check!r}: use 'getent' or 'none'")


# --- allauth provider settings from the environment -------------------------------------------


def _trust_settings(item: Mapping) -> dict:
    """What an IdP may vouch for (see `IdpTrust`), kept in its allauth app settings: ``netid_scopes``
    (a scope or a list of them), ``email_verified`` and ``trusted_for`` (checked here, so a bad one stops the
    start). allauth reads none of them."""
    trust = {}
    if item.get("netid_scopes"):
        trust["netid_scopes"] = _as_list(item["netid_scopes"])
    if item.get("email_verified"):
        trust["email_verified"] = True
    if trusted_for := parse_trusted_for(item.get("trusted_for")):
        trust["trusted_for"] = trusted_for
    return trust


def saml_attribute_mapping(netid_claim: str) -> dict[str, list[str]]:
    """allauth's SAML attribute mapping: only `uid` (the stable account key), the netid claim. The person's
    e-mail and names come from the identity (identity_from_claims, under every name of each claim), which
    SocialAccountAdapter.populate_user puts on the user over whatever allauth mapped."""
    return {"uid": list(CLAIM_ALIASES.get(netid_claim, (netid_claim,)))}


def saml_app(idp: Mapping, netid_claim: str) -> dict:
    """One entry of SOCIALACCOUNT_PROVIDERS["saml"]["APPS"] from a LABQUEUE_SAML_IDPS item."""
    if "metadata_url" in idp:
        idp_settings = {"entity_id": idp["entity_id"], "metadata_url": idp["metadata_url"]}
    else:
        idp_settings = {"entity_id": idp["entity_id"], "sso_url": idp["sso_url"], "x509cert": idp["x509cert"]}
        if idp.get("slo_url"):
            idp_settings["slo_url"] = idp["slo_url"]
    advanced = {
        "want_assertion_signed": True,
        "reject_idp_initiated_sso": True,
        "allow_single_label_domains": True,
        **idp.get("advanced", {}),
    }
    app_settings = {
        "idp": idp_settings,
        "attribute_mapping": idp.get("attribute_mapping") or saml_attribute_mapping(netid_claim),
        "advanced": advanced,
        **_trust_settings(idp),
    }
    if idp.get("sp_entity_id"):
        app_settings["sp"] = {"entity_id": idp["sp_entity_id"]}
    return {
        "name": idp.get("name", "Campus login"),
        "provider_id": idp["entity_id"],
        "client_id": idp["id"],
        "settings": app_settings,
    }


def oidc_app(provider: Mapping) -> dict:
    """One entry of SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] from a LABQUEUE_OIDC_PROVIDERS item."""
    app_settings = {
        "server_url": provider["server_url"],
        "uid_field": provider.get("uid_field", "sub"),
        "oauth_pkce_enabled": provider.get("pkce", True),
    }
    if provider.get("scope"):
        app_settings["scope"] = provider["scope"]
    if provider.get("token_auth_method"):
        app_settings["token_auth_method"] = provider["token_auth_method"]
    app_settings.update(_trust_settings(provider))
    return {
        "provider_id": provider["id"],
        "name": provider.get("name", "Campus login"),
        "client_id": provider["client_id"],
        "secret": provider.get("secret", ""),
        "settings": app_settings,
    }


def socialaccount_providers(*, saml: Iterable[Mapping], oidc: Iterable[Mapping], netid_claim: str) -> dict[str, dict]:
    return {
        "saml": {"APPS": [saml_app(idp, netid_claim) for idp in saml]},
        "openid_connect": {"APPS": [oidc_app(provider) for provider in oidc], "OAUTH_PKCE_ENABLED": True},
    }
