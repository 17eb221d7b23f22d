"""405 answers under /api/v1/ as problem documents (web side). django-ninja answers a method an address does not
take with Django's bare HttpResponseNotAllowed before any of the API's exception handlers (api.problems) can see
it, so this middleware rewrites those answers, and only those, under the API's prefix."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from api.problems import MEDIA_TYPE, problem

PREFIX = "/api/v1/"


class MethodNotAllowedProblemMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or not request.path.startswith(PREFIX):
            return response
        if response.get("Content-Type", "").startswith(MEDIA_TYPE):
            return response
        allowed = response.get("Allow", "")
        detail = f"This address does not take {request.method}." + (f" It takes {allowed}." if allowed else "")
        return problem(405, detail, headers={"Allow": allowed} if allowed else None)
