"""HEAD answered as GET, on every page and on /healthz and /readyz (web side: a middleware).

Monitors and link checkers often ask with HEAD, and a view decorated `require_GET` or
`require_http_methods(["GET", "POST"])` would answer 405. RFC 9110 says HEAD is GET without the body: so
the request runs as a GET (the same access checks, the same status and headers) and the body is dropped
here, keeping the Content-Length a GET would send. A file download's file is closed unread.
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class HeadAsGetMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "HEAD":
            return self.get_response(request)
        request.method = "GET"
        response = self.get_response(request)
        if response.streaming:
            response.streaming_content = iter(())  # the file stays among the closers: closed with the response
        else:
            length = len(response.content)
            response.content = b""
            response["Content-Length"] = str(length)
        return response
