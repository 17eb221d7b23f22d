"""Who calls the API and what they may do (web side, at every API request).

Two ways in: a personal access token (`Authorization: Bearer lqp_...`), counted in Redis against its owner's
rate limit (all of one person's tokens together), or the browser's signed-in session, with Django's CSRF check
on unsafe methods. A token reaches no further than its scopes, its course (when it has one) and its owner's
roles *now*: the scopes that need course staff are checked against the owner's role at each request, so a TA
dropped from a course loses its gradebook at once. The session has every scope: it is the person themselves.
"""

import logging
import time
from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.security import HttpBearer, SessionAuth

from api.models import STAFF_SCOPES, PersonalToken
from api.services import TokenRefused, token_authenticate
from courses.models import STAFF_ROLES, Course
from courses.selectors import course_role
from portal.broker import broker_redis

logger = logging.getLogger(__name__)


class RateLimited(Exception):
    """Over the owner's requests per minute: answered 429 with Retry-After."""

    def __init__(self, retry_after: int):
        super().__init__(
            f"Your API tokens made more than {settings.LABQUEUE_API_REQUESTS_PER_MINUTE} requests in a minute "
            f"(the limit counts all of one person's tokens together). Wait {retry_after} s and try again, and "
            f"slow the script down (poll a job every few seconds)."
        )
        self.retry_after = retry_after


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> PersonalToken:
        found = token_authenticate(text=token)  # TokenRefused: 401 (api.problems)
        rate_check(found)
        request.user = found.owner  # what the pages' services and selectors read
        return found


class SessionCsrfAuth(SessionAuth):
    """The browser's session; ninja runs Django's CSRF check for unsafe methods (csrf=True)."""


def rate_check(token: PersonalToken) -> None:
    """Count one request in the current minute of the token's owner, all their tokens together (more tokens buy
    no more requests); RateLimited past the limit. While Redis does not answer nothing is counted and the request
    goes on (the API stays up with the broker down; docs/security.md)."""
    window = int(time.time() // 60)
    key = f"labqueue:api:rate:person:{token.owner_id}:{window}"
    try:
        pipe = broker_redis().pipeline()
        pipe.incr(key)
        pipe.expire(key, 61)
        count, _ = pipe.execute()
    except redis.RedisError as error:
        logger.warning("api: rate limit not counted (Redis does not answer): %s", error)
        return
    if count > settings.LABQUEUE_API_REQUESTS_PER_MINUTE:
        raise RateLimited(retry_after=max(1, 60 - int(time.time()) % 60))


@dataclass(frozen=True)
class Caller:
    """The person behind a request and the token they sent (None: the browser session)."""

    user: object
    token: PersonalToken | None

    @classmethod
    def of(cls, request: HttpRequest) -> "Caller":
        if isinstance(request.auth, PersonalToken):
            return cls(user=request.auth.owner, token=request.auth)
        return cls(user=request.auth, token=None)

    def require(self, scope: str) -> None:
        """403 unless the token carries the scope."""
        if self.token is not None and scope not in self.token.scopes:
            raise PermissionDenied(
                f"This token does not have the {scope} scope. Make a token with it on your API tokens page."
            )

    def require_course(self, scope: str, course_slug: str, *, staff: bool = False) -> None:
        """403 unless the token carries the scope, may reach the course, and (for the staff scopes, or `staff`)
        its owner is a TA or instructor of the course now. Said the same whether or not the course exists."""
        self.require(scope)
        if self.token is not None and self.token.course is not None and self.token.course.slug != course_slug:
            raise PermissionDenied(f"This token reaches only the course {self.token.course.slug}.")
        if staff or scope in STAFF_SCOPES:
            course = Course.objects.filter(slug=course_slug).first()
            if course is None or course_role(user=self.user, course=course) not in STAFF_ROLES:
                raise PermissionDenied(
                    "Only the course's TAs and instructors can do that, and you are not one of them (now)."
                )

    def reaches(self, course_slug: str) -> bool:
        """Whether a token limited to one course reaches this one (the session reaches every course)."""
        return self.token is None or self.token.course is None or self.token.course.slug == course_slug


__all__ = ["Caller", "RateLimited", "SessionCsrfAuth", "TokenAuth", "TokenRefused"]
