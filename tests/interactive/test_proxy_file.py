"""The shipped nginx template (deploy/nginx/labqueue.conf.template), run by nginx in front of two small servers
of the test's own: one stands for the portal (its auth check, its pages, its "session closed" page), one for
a student's notebook server. What the browser sees, and what each server is sent. No cluster, no database."""

import gzip
import http.client
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

SECRET = "proxy-secret-of-this-test"
TOKEN = "c0ffee0ddba11notebooktoken0123456789"
CSP = "default-src 'self'; frame-ancestors 'self'"
SESSION = "6f1c2a9e-5b7d-4e21-9c3a-0d4e5f6a7b8c"
ENDED = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


@dataclass
class Stub:
    """A running server of the test's: its address and every request it was sent (method, path, headers)."""

    address: str = ""
    requests: list[tuple[str, str, http.client.HTTPMessage]] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.requests]


def serve(answer) -> Iterator[Stub]:
    """A threading HTTP/1.1 server on a free loopback port that records each request, then lets
    `answer(handler, stub)` reply to it."""
    stub = Stub()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            stub.requests.append((self.command, self.path, self.headers))
            answer(self, stub)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.address = "{}:{}".format(*server.server_address)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()


def reply(handler: BaseHTTPRequestHandler, status: int, body: str, headers: dict[str, str] | None = None) -> None:
    """An answer with `body`, compressed when the request accepts gzip (as Jupyter's server does)."""
    data = body.encode()
    headers = {"Content-Type": "text/html; charset=utf-8", **(headers or {})}
    if "gzip" in handler.headers.get("Accept-Encoding", ""):
        data, headers["Content-Encoding"] = gzip.compress(data), "gzip"
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture
def notebook() -> Iterator[Stub]:
    """A notebook server: writes its token into its page, sets a cookie and a policy of its own, redirects with
    its own address, and echoes what a WebSocket sends."""

    def answer(handler: BaseHTTPRequestHandler, stub: Stub) -> None:
        if handler.headers.get("Upgrade", "").lower() == "websocket":
            handler.send_response(101)
            handler.send_header("Upgrade", "websocket")
            handler.send_header("Connection", "Upgrade")
            handler.end_headers()
            handler.wfile.flush()
            handler.wfile.write(handler.rfile.readline())
            handler.wfile.flush()
            handler.close_connection = True
        elif handler.path.endswith("/tree"):
            reply(handler, 302, "", {"Location": f"http://{stub.address}/interactive/{SESSION}/lab"})
        else:
            config = f'{{"token": "{TOKEN}", "path": "{handler.path}", "terminalsUrl": "t?token={TOKEN}"}}'
            page = f'<script id="jupyter-config-data">{config}</script>'
            headers = {"Set-Cookie": "username-node=abc; Path=/", "Content-Security-Policy": "*"}
            if "/api/" in handler.path:
                page, headers["Content-Type"] = f'{{"token": "{TOKEN}"}}', "application/json"
            reply(handler, 200, page, headers)

    yield from serve(answer)


@pytest.fixture
def portal(notebook: Stub) -> Iterator[Stub]:
    """The portal: its auth check admits SESSION (for the proxy's secret only) and refuses every other one;
    its "session closed" page is a 404; any other page is a page."""

    def answer(handler: BaseHTTPRequestHandler, stub: Stub) -> None:
        if handler.path == "/interactive/auth/":
            admitted = handler.headers.get("X-LabQueue-Proxy-Secret") == SECRET and handler.headers.get(
                "X-Original-URI", ""
            ).startswith(f"/interactive/{SESSION}/")
            if admitted:
                headers = {"X-LabQueue-Upstream": notebook.address, "X-LabQueue-Token": TOKEN, "X-LabQueue-CSP": CSP}
                reply(handler, 200, "", headers)
            else:
                reply(handler, 403, "")
        elif handler.path == "/interactive-closed/":
            reply(handler, 404, "This session is closed.")
        elif handler.path == "/accounts/profile/":
            reply(handler, 302, "", {"Location": "/accounts/login/?next=/accounts/profile/"})
        else:
            reply(handler, 200, "A portal page.", {"Set-Cookie": "sessionid=portal; Path=/; HttpOnly"})

    yield from serve(answer)


@pytest.fixture
def proxy(portal: Stub, portal_proxy) -> str:
    return portal_proxy(portal.address, secret=SECRET).base_url


def fetch(base_url: str, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    """GET `path` through the proxy as a browser would; the response is read."""
    connection = http.client.HTTPConnection(base_url.removeprefix("http://"), timeout=30)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    body = response.read()
    response.body = (gzip.decompress(body) if response.getheader("Content-Encoding") == "gzip" else body).decode()
    connection.close()
    return response


def test_a_session_the_portal_refuses_answers_with_the_portals_not_found_page(proxy, portal, notebook):
    response = fetch(proxy, f"/interactive/{ENDED}/lab")

    assert response.status == 404
    assert response.body == "This session is closed."
    assert portal.paths() == ["/interactive/auth/", "/interactive-closed/"]
    assert notebook.requests == []


def test_an_admitted_request_goes_to_the_server_the_auth_check_named_with_its_token_and_none_of_the_portals_cookies(
    proxy, portal, notebook
):
    response = fetch(proxy, f"/interactive/{SESSION}/api/contents?type=notebook", {"Cookie": "sessionid=student"})

    assert response.status == 200
    [(_, path, sent)] = notebook.requests
    assert path == f"/interactive/{SESSION}/api/contents?type=notebook"
    assert sent["Authorization"] == f"token {TOKEN}"
    assert sent["Cookie"] is None
    # The auth check is asked with the browser's own cookie (who is asking), the URI and the proxy's secret.
    [(_, _, asked)] = portal.requests
    assert asked["Cookie"] == "sessionid=student"
    assert asked["X-Original-URI"] == f"/interactive/{SESSION}/api/contents?type=notebook"
    assert asked["X-LabQueue-Proxy-Secret"] == SECRET


@pytest.mark.parametrize("path", ["lab", "api/me"])
def test_the_token_the_notebook_server_writes_into_an_answer_reaches_the_browser_as_hidden(proxy, path):
    response = fetch(proxy, f"/interactive/{SESSION}/{path}", {"Accept-Encoding": "gzip, deflate"})

    assert '"token": "hidden"' in response.body
    assert path == "api/me" or "t?token=hidden" in response.body
    assert TOKEN not in response.body and TOKEN not in str(response.headers)


def test_a_browser_cannot_call_the_auth_check(proxy, portal):
    response = fetch(proxy, "/interactive/auth/", {"X-Original-URI": f"/interactive/{SESSION}/lab"})

    assert response.status == 404
    assert response.getheader("X-LabQueue-Upstream") is None
    assert portal.requests == []


def test_the_notebook_servers_cookies_never_reach_the_browser(proxy):
    response = fetch(proxy, f"/interactive/{SESSION}/lab")

    assert response.status == 200
    assert response.getheader("Set-Cookie") is None


def test_a_notebook_page_carries_the_policy_the_auth_check_gave_and_not_the_servers_own(proxy):
    response = fetch(proxy, f"/interactive/{SESSION}/lab")

    assert response.headers.get_all("Content-Security-Policy") == [CSP]


def test_a_redirect_of_the_notebook_server_names_the_portal_never_the_node(proxy, notebook):
    response = fetch(proxy, f"/interactive/{SESSION}/tree")

    assert response.status == 302
    assert response.getheader("Location") == f"/interactive/{SESSION}/lab"
    assert notebook.address not in str(response.headers)


def test_a_websocket_is_carried_both_ways_with_the_token_once_the_check_saw_its_origin(proxy, portal, notebook):
    host = proxy.removeprefix("http://")
    with socket.create_connection(tuple(host.split(":")), timeout=30) as browser:
        browser.sendall(
            f"GET /interactive/{SESSION}/api/kernels/k/channels HTTP/1.1\r\nHost: {host}\r\n"
            "Origin: https://elsewhere.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        answer = browser.makefile("rb")
        assert answer.readline().startswith(b"HTTP/1.1 101")
        while answer.readline() not in (b"\r\n", b""):
            pass
        browser.sendall(b"a message from the browser\n")
        assert answer.readline() == b"a message from the browser\n"
    [(_, _, sent)] = notebook.requests
    assert sent["Upgrade"] == "websocket" and sent["Connection"].lower() == "upgrade"
    assert sent["Authorization"] == f"token {TOKEN}"
    # Jupyter skips its own Origin check for a request that brings the token: the portal's check decides.
    [(_, _, asked)] = portal.requests
    assert asked["Origin"] == "https://elsewhere.example"


def test_portal_pages_go_to_the_web_server_with_the_browsers_host_and_request_id_and_never_the_proxys_secret(
    proxy, portal
):
    response = fetch(proxy, "/courses/", {"X-Request-ID": "request-0123456789", "X-LabQueue-Proxy-Secret": SECRET})

    assert response.status == 200 and response.body == "A portal page."
    assert response.getheader("Set-Cookie") == "sessionid=portal; Path=/; HttpOnly"
    [(_, path, sent)] = portal.requests
    assert path == "/courses/"
    assert sent["Host"] == proxy.removeprefix("http://")
    assert sent["X-Request-ID"] == "request-0123456789"
    assert sent["X-Forwarded-For"] == "127.0.0.1" and sent["X-Forwarded-Proto"] == "http"
    assert sent["X-LabQueue-Proxy-Secret"] is None


def test_a_request_without_an_id_gets_one_from_the_proxy(proxy, portal):
    fetch(proxy, "/courses/")

    [(_, _, sent)] = portal.requests
    assert re.fullmatch(r"[0-9a-f]{32}", sent["X-Request-ID"])


def test_the_portals_redirects_reach_the_browser_as_the_portal_wrote_them(proxy):
    response = fetch(proxy, "/accounts/profile/", {"X-Forwarded-Proto": "https"})

    assert response.status == 302
    assert response.getheader("Location") == "/accounts/login/?next=/accounts/profile/"


@pytest.mark.parametrize("path", ["/courses/", f"/interactive/{ENDED}/lab"])
def test_a_web_server_that_does_not_answer_gives_a_page_in_words_not_a_bare_error(portal_proxy, path):
    """gunicorn stopped (nothing listens on its port): pages and the session check both fail upstream."""
    from tests.interactive.proxy import free_port

    proxy = portal_proxy(f"127.0.0.1:{free_port()}", secret=SECRET).base_url
    response = fetch(proxy, path)
    assert response.status == 503
    assert response.getheader("Retry-After") == "30"
    assert "LabQueue is not answering right now" in response.body and "Try again in a minute" in response.body
