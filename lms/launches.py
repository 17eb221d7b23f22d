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
from pylti1p3.exception import LtiException, OIDCException

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


class _Launch(DjangoMessageLaunch):
    def validate_state(self):
        try:
            return super().validate_state()
        except LtiException:
            raise LaunchRefused(400, "Your browser did not send back LabQueue's launch cookie.", True) from None


def launch_validate(request: HttpRequest) -> LtiLaunch:
    """The verified launch of this request, its nonce used up, its deployment active; or LaunchRefused."""
    tool_config = DjangoToolConfig()
    message_launch = _Launch(request, tool_config, launch_data_storage=storage())
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
