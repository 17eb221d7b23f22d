"""The LTI 1.3 protocol on the tool's side, over pylti1p3 and django-lti (web side: lms.views only).

pylti1p3 checks a launch's state cookie, the id_token's signature against the platform's key set (fetched on
each launch, so a platform's new key id is picked up at once), its issuer and audience (the registration is
looked up by both), expiry and deployment. What it leaves to the tool is done here: a nonce is accepted once
(pylti1p3 only checks that it was issued), an inactive or unknown deployment is refused, and every failure is a
`LaunchRefused` carrying the words a person sees and the HTTP status, never an uncaught exception.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from lti_tool.lti_core.utils import normalize_role
from lti_tool.models import Key, LtiLaunch
from lti_tool.utils import DjangoToolConfig, sync_data_from_launch
from pylti1p3.contrib.django import DjangoCacheDataStorage, DjangoMessageLaunch, DjangoOIDCLogin
from pylti1p3.exception import LtiException, LtiMessageValidationException, OIDCException

from courses.models import Role

CACHE = "lti"
#: How long a used nonce is remembered: longer than any id_token the launch accepts lives (pylti1p3 keeps the
#: issued nonce a day), so a replay is always seen.
NONCE_SECONDS = 2 * 24 * 3600
ROLE_PREFIX = "http://purl.imsglobal.org/vocab/lis/v2/membership"
TEACHING_ASSISTANT = f"{ROLE_PREFIX}/Instructor#TeachingAssistant"
NO_KEY = "LabQueue is not ready for LMS launches yet (it has no signing key): an operator runs manage.py rotate_keys."


@dataclass
class LaunchRefused(Exception):
    status: int
    reason: str
    cookie_missing: bool = False


def storage() -> DjangoCacheDataStorage:
    return DjangoCacheDataStorage(cache_name=CACHE)


def login_redirect(request: HttpRequest, registration_uuid) -> HttpResponse:
    """OIDC third-party login initiation: the state cookie, the nonce, and the redirect to the platform.

    pylti1p3's cookie-check page (for launches inside an iframe) is not used: it runs an inline script the
    portal's CSP refuses, and the portal is never framed (frame-ancestors 'none'); LMSs open it in a new window.
    """
    params = request.POST if request.method == "POST" else request.GET
    target = params.get("target_link_uri")
    if not target:
        raise LaunchRefused(400, "The LMS did not say which page to open (no target_link_uri).")
    login = DjangoOIDCLogin(request, DjangoToolConfig(registration_uuid), launch_data_storage=storage())
    try:
        return login.redirect(target)
    except (LtiException, OIDCException) as error:
        raise LaunchRefused(400, f"The LMS's sign-in request was not accepted: {error}.") from None
    except Key.DoesNotExist:
        raise LaunchRefused(503, NO_KEY) from None


CLAIM = "https://purl.imsglobal.org/spec/lti/claim"
DEEP_LINKING_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
#: The longest id django-lti stores (its users' sub, contexts' and deployments' ids)
LONGEST_ID = 255
COOKIE_MISSING = "Your browser did not send back LabQueue's launch cookie."


class _Launch(DjangoMessageLaunch):
    def validate_state(self):
        try:
            return super().validate_state()
        except LtiException:
            raise LaunchRefused(400, COOKIE_MISSING, True) from None

    def validate_jwt_format(self):
        """pylti1p3 reads the nonce, issuer, audience and deployment before the signature and takes their types on
        trust: a token of another shape (anyone can send one) is refused here, as one signed with odd claims is."""
        super().validate_jwt_format()
        problem = claims_problem(self._jwt["header"], self._jwt["body"])
        if problem:
            raise LtiMessageValidationException(problem)
        return self


def _is_id(value) -> bool:
    return isinstance(value, str) and 0 < len(value) <= LONGEST_ID


def claims_problem(header, body) -> str:
    """Why an id_token's header and body are not a launch LabQueue can read ("" when they are)."""
    if not isinstance(header, dict) or not isinstance(body, dict):
        return "Invalid JWT format: the header and body must be JSON objects."
    audience = body.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if not (isinstance(body.get("nonce"), str) and body["nonce"] and isinstance(body.get("iss"), str)):
        return "Invalid JWT format: the nonce and issuer must be text."
    if not audiences or not all(isinstance(one, str) for one in audiences):
        return "Invalid JWT format: the audience must be a client id."
    if not _is_id(body.get("sub", "-")) or not _is_id(body.get(f"{CLAIM}/deployment_id", "-")):
        return f"Invalid JWT format: the user and the deployment must be ids of at most {LONGEST_ID} characters."
    roles = body.get(f"{CLAIM}/roles", [])
    if not isinstance(roles, list) or not all(isinstance(role, str) for role in roles):
        return "Invalid JWT format: the roles must be a list of texts."
    context = body.get(f"{CLAIM}/context")
    if not isinstance(context, dict) or not _is_id(context.get("id")):
        return "No course context: LabQueue opens from a course of the LMS, and this launch names none."
    if body.get(f"{CLAIM}/message_type") == "LtiDeepLinkingRequest":
        settings = body.get(DEEP_LINKING_SETTINGS)
        if not isinstance(settings, dict) or not _is_address(settings.get("deep_link_return_url")):
            return "Invalid JWT format: the deep-linking settings must name the address to return to."
    return ""


def _is_address(value) -> bool:
    return isinstance(value, str) and value.startswith(("https://", "http://"))


def launch_validate(request: HttpRequest) -> LtiLaunch:
    """The verified launch of this request, its nonce used up, its deployment active; or LaunchRefused."""
    tool_config = DjangoToolConfig()
    try:
        message_launch = _Launch(request, tool_config, launch_data_storage=storage())
    except LtiException:  # pylti1p3's own session cookie, missing over HTTPS (a browser blocking it)
        raise LaunchRefused(400, COOKIE_MISSING, True) from None
    try:
        message_launch.validate()
    except LtiException as error:
        raise LaunchRefused(403, _plain(str(error))) from None
    except Key.DoesNotExist:
        raise LaunchRefused(503, NO_KEY) from None
    nonce = message_launch.get_launch_data()["nonce"]
    if not caches[CACHE].add(f"nonce-used:{nonce}", True, NONCE_SECONDS):
        raise LaunchRefused(403, "This launch was already used once; a launch cannot be replayed.")
    if not tool_config.deployment.is_active:
        raise LaunchRefused(403, "This LMS deployment is not switched on in LabQueue yet: an operator activates it.")
    launch = LtiLaunch(message_launch)
    sync_data_from_launch(launch)
    return launch


def _plain(library_message: str) -> str:
    known = {
        "Signature verification failed": "its signature does not match the LMS's keys",
        "Signature has expired": "it has expired",
        "Registration not found": "it comes from an LMS (issuer and client id) not registered here",
        "Invalid Nonce": "LabQueue did not start this launch",
        "Unable to find public key": "it is signed with a key the LMS does not publish",
        "Error while fetching": "LabQueue could not fetch the LMS's public keys; try again in a few minutes",
        "No course context": "LabQueue opens from a course of the LMS, and this launch names none",
    }
    why = next((words for marker, words in known.items() if marker in library_message), "it is not valid")
    return f"The launch could not be verified: {why}."


def claim_value(data: dict, claim: str) -> str:
    """The netid a claim path (``claim`` or ``claim#key``) names in `data` (lowercased), or "" without one."""
    name, _, key = claim.partition("#")
    value = data.get(name)
    if key:
        value = value.get(key) if isinstance(value, dict) else None
    return value.strip().lower() if isinstance(value, str) else ""


def campus_identity(launch: LtiLaunch) -> str:
    """The netid the registration's identity claim carries, or "" when it has none."""
    identity = getattr(launch.registration, "identity", None)
    return claim_value(launch.get_launch_data(), identity.claim) if identity else ""


def course_role(roles: list[str] | None) -> str | None:
    """The LabQueue course role that LTI context roles stand for (never staff rights), or None."""
    roles = {normalize_role(role) for role in roles or []}
    if TEACHING_ASSISTANT in roles:
        return Role.TA
    if f"{ROLE_PREFIX}#Instructor" in roles:
        return Role.INSTRUCTOR
    if f"{ROLE_PREFIX}#Learner" in roles:
        return Role.STUDENT
    return None
