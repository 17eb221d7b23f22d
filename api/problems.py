"""Errors as RFC 9457 problem documents (application/problem+json: type, title, status, detail), carrying the
plain messages the pages show (web side: the API's exception handlers, api.endpoints)."""

import json
import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import Schema
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as SchemaError

from api.auth import RateLimited
from api.services import TokenRefused

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/problem+json"

TITLES = {
    400: "Bad request",
    401: "Not signed in",
    403: "Not allowed",
    404: "Not found",
    405: "Method not allowed",
    409: "Not possible now",
    410: "Gone",
    413: "Too large",
    422: "Refused",
    429: "Too many requests",
    500: "Server error",
}


class Problem(Schema):
    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: dict[str, list[str]] | None = None


class FormRefused(Exception):
    """A page's form refused the request: its messages, per field (422)."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(" ".join(message for messages in errors.values() for message in messages))
        self.errors = errors


def problem(status: int, detail: str, *, errors: dict | None = None, headers: dict | None = None) -> HttpResponse:
    body = {"type": "about:blank", "title": TITLES.get(status, "Error"), "status": status, "detail": detail}
    if errors:
        body["errors"] = errors
    return HttpResponse(json.dumps(body), status=status, content_type=MEDIA_TYPE, headers=headers)


def _message(error: Exception, default: str) -> str:
    return str(error.args[0]) if error.args and isinstance(error.args[0], str) and error.args[0] else default


def _not_found(request: HttpRequest, error: Http404) -> HttpResponse:
    return problem(404, _message(error, "There is nothing at this address."))


def _denied(request: HttpRequest, error: PermissionDenied) -> HttpResponse:
    return problem(403, _message(error, "You are not allowed to do that."))


def _refused(request: HttpRequest, error: ValidationError) -> HttpResponse:
    return problem(422, " ".join(error.messages))


def _form_refused(request: HttpRequest, error: FormRefused) -> HttpResponse:
    return problem(422, str(error), errors=error.errors)


def _token_refused(request: HttpRequest, error: TokenRefused) -> HttpResponse:
    return problem(401, str(error), headers={"WWW-Authenticate": 'Bearer realm="labqueue"'})


def _unauthenticated(request: HttpRequest, error: AuthenticationError) -> HttpResponse:
    detail = (
        "Sign in, or send a personal access token as 'Authorization: Bearer lqp_...' "
        "(make one on your API tokens page)."
    )
    return problem(401, detail, headers={"WWW-Authenticate": 'Bearer realm="labqueue"'})


def _http_error(request: HttpRequest, error: HttpError) -> HttpResponse:
    if error.status_code == 403:  # ninja's CSRF refusal
        return problem(403, "The browser's CSRF token is missing or wrong: reload the page and try again.")
    return problem(error.status_code, str(error))


def _bad_input(request: HttpRequest, error: SchemaError) -> HttpResponse:
    errors: dict[str, list[str]] = {}
    for item in error.errors:
        where = ".".join(str(part) for part in item.get("loc", ())[1:]) or "request"
        errors.setdefault(where, []).append(item.get("msg", "invalid"))
    detail = "The request does not have the form this address expects: " + "; ".join(
        f"{where}: {', '.join(messages)}" for where, messages in errors.items()
    )
    return problem(422, detail, errors=errors)


def _rate_limited(request: HttpRequest, error: RateLimited) -> HttpResponse:
    return problem(429, str(error), headers={"Retry-After": str(error.retry_after)})


def _suspicious(request: HttpRequest, error: SuspiciousOperation) -> HttpResponse:
    """What Django's pages answer with 400: a body over the size limit (413 here), too many fields, a bad host."""
    if isinstance(error, RequestDataTooBig):
        return problem(413, "The request is larger than the portal accepts. Send less at once.")
    return problem(400, "The portal cannot read this request (too many fields, or a malformed one).")


def _unexpected(request: HttpRequest, error: Exception) -> HttpResponse:
    logger.exception("api: unexpected error on %s %s", request.method, request.path)
    return problem(500, "Something went wrong on the portal's side. Try again; if it goes on, tell the staff.")


HANDLERS = (
    (Exception, _unexpected),
    (Http404, _not_found),
    (PermissionDenied, _denied),
    (ValidationError, _refused),
    (FormRefused, _form_refused),
    (TokenRefused, _token_refused),
    (AuthenticationError, _unauthenticated),
    (HttpError, _http_error),
    (SchemaError, _bad_input),
    (RateLimited, _rate_limited),
    (SuspiciousOperation, _suspicious),
)


def install(api) -> None:
    """Every error the API can meet, answered as a problem document; nothing else reaches the client."""
    for kind, handler in HANDLERS:
        api.add_exception_handler(kind, handler)
