"""A signed-in person's pages are theirs alone (web side: a middleware).

A response that says nothing of caching gets `Cache-Control: private`, so a shared cache (a campus proxy, a CDN)
never keeps one student's job page or file for another; the person's own browser still may. A view that sets its
own Cache-Control (the polled live parts) keeps it; anonymous pages and static files are left as they are.
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control


class PrivateWhenSignedInMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and not response.has_header("Cache-Control"):
            patch_cache_control(response, private=True)
        return response
