"""The shipped nginx template in front of a real JupyterLab (the lab's, built by scripts/labcluster up in
/opt/labqueue/jupyter), started as a student the way a session's job starts it, with a small server of the
test's own standing for the portal's auth check. What the template must get right for JupyterLab itself: its
page without the token, its API behind the token the proxy adds (no cookie, no XSRF form field), its
kernel WebSocket. No cluster, no database."""

import base64
import http.client
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.interactive.proxy import free_port, port_wait

JUPYTER = Path("/opt/labqueue/jupyter/bin/jupyter")
SECRET = "proxy-secret-of-this-test"
TOKEN = "f00dfacefeedbeef0123456789abcdef"
SESSION = "3c9d7e1f-2a4b-4c6d-8e0f-1a2b3c4d5e6f"
STUDENT = pwd.getpwnam("student1")


@pytest.fixture
def jupyter(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """JupyterLab as student1 on a free loopback port, under the session's base URL: its address and folder
    (outside pytest's own temporary directory, which only root may enter)."""
    if not JUPYTER.exists():
        pytest.fail(f"{JUPYTER} is missing: scripts/labcluster up builds it")
    folder = Path(tempfile.mkdtemp(prefix="labqueue-session-"))
    folder.chmod(0o700)
    os.chown(folder, STUDENT.pw_uid, STUDENT.pw_gid)
    port = free_port()
    command = [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}"]
    command += [f"--ServerApp.base_url=/interactive/{SESSION}/", f"--ServerApp.root_dir={folder}"]
    environment = {"JUPYTER_TOKEN": TOKEN, "PATH": "/usr/bin:/bin", "HOME": str(folder)}
    with (tmp_path / "jupyter.log").open("w") as log:
        process = subprocess.Popen(
            ["/usr/sbin/runuser", "-u", "student1", "--", *command], env=environment, stdout=log, stderr=log
        )
    try:
        port_wait(port, process, log=tmp_path / "jupyter.log", seconds=60)
        yield f"127.0.0.1:{port}", folder
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(folder)


@pytest.fixture
def auth_check(jupyter) -> Iterator[str]:
    """The portal's auth check, admitting every request to the session: its address."""
    address, _ = jupyter

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/interactive/auth/" else 404)
            self.send_header("X-LabQueue-Upstream", address)
            self.send_header("X-LabQueue-Token", TOKEN)
            self.send_header("X-LabQueue-CSP", "default-src 'self'")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield "{}:{}".format(*server.server_address)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxy(auth_check, portal_proxy) -> str:
    return portal_proxy(auth_check, secret=SECRET).base_url.removeprefix("http://")


def request(host: str, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(host, timeout=60)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
    response = connection.getresponse()
    answer = (response.status, response.read())
    connection.close()
    return answer


def test_jupyterlabs_page_comes_through_the_proxy_without_its_token(proxy):
    status, page = request(proxy, "GET", f"/interactive/{SESSION}/lab")

    assert status == 200
    assert b'"token": "hidden"' in page
    assert TOKEN.encode() not in page


def test_a_notebook_saved_through_the_proxy_is_the_students_file(proxy, jupyter):
    _, folder = jupyter
    notebook = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}

    status, _ = request(
        proxy, "PUT", f"/interactive/{SESSION}/api/contents/work.ipynb", {"type": "notebook", "content": notebook}
    )

    assert status == 201
    assert (folder / "work.ipynb").stat().st_uid == STUDENT.pw_uid


def test_a_kernels_websocket_opens_through_the_proxy(proxy):
    status, kernel = request(proxy, "POST", f"/interactive/{SESSION}/api/kernels", {})
    assert status == 201

    with socket.create_connection(tuple(proxy.split(":")), timeout=60) as browser:
        key = base64.b64encode(os.urandom(16)).decode()
        browser.sendall(
            f"GET /interactive/{SESSION}/api/kernels/{json.loads(kernel)['id']}/channels HTTP/1.1\r\n"
            f"Host: {proxy}\r\nOrigin: http://{proxy}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        assert browser.makefile("rb").readline().startswith(b"HTTP/1.1 101")
