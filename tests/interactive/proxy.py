"""nginx in front of a test's portal, as production runs it: the shipped deploy/nginx/labqueue.conf.template,
rendered by the `envsubst` command the README gives, under a main nginx.conf of the test's own (in the
foreground, its pid, logs and temporary files in a directory of the test's) on a free loopback port.
Test side only: tests/interactive/conftest.py's `portal_proxy` fixture starts one per call."""

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "deploy" / "nginx" / "labqueue.conf.template"
#: The template's placeholders, and the only names envsubst may replace (nginx's own $variables stay).
PLACEHOLDERS = ("LABQUEUE_PROXY_LISTEN", "LABQUEUE_WEB_UPSTREAM", "LABQUEUE_INTERACTIVE_PROXY_SECRET")

MAIN_CONF = """\
daemon off;
worker_processes 1;
{user}
pid {directory}/nginx.pid;
error_log {directory}/error.log info;
events {{
    worker_connections 256;
}}
http {{
    access_log {directory}/access.log;
    client_body_temp_path {directory}/client_body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    include {directory}/labqueue.conf;
}}
"""


@dataclass(frozen=True)
class RunningProxy:
    base_url: str
    directory: Path

    def error_log(self) -> str:
        return (self.directory / "error.log").read_text()


def nginx() -> str:
    return shutil.which("nginx") or "/usr/sbin/nginx"


def template_render(*, listen: str, web_upstream: str, secret: str) -> str:
    """The template with its three placeholders filled in, by the README's own command."""
    values = dict(zip(PLACEHOLDERS, (listen, web_upstream, secret), strict=True))
    rendered = subprocess.run(
        ["envsubst", " ".join(f"${name}" for name in PLACEHOLDERS)],
        input=TEMPLATE.read_text(),
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **values},
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return rendered.stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def config_write(*, directory: Path, listen: str, web_upstream: str, secret: str) -> Path:
    """nginx.conf and labqueue.conf in `directory`; nginx -t must accept them."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "labqueue.conf").write_text(template_render(listen=listen, web_upstream=web_upstream, secret=secret))
    # As root, nginx's workers would otherwise run as nobody, who cannot enter a test's temporary directory.
    user = "user root;" if os.geteuid() == 0 else ""
    main = directory / "nginx.conf"
    main.write_text(MAIN_CONF.format(directory=directory, user=user))
    checked = subprocess.run(
        [nginx(), "-t", "-q", "-p", str(directory), "-e", str(directory / "error.log"), "-c", str(main)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert checked.returncode == 0, f"nginx -t refused the rendered template:\n{checked.stderr}"
    return main


@contextmanager
def proxy_running(*, web_upstream: str, secret: str, directory: Path) -> Iterator[RunningProxy]:
    """nginx with the rendered template in front of `web_upstream` (host:port) until the block ends."""
    port = free_port()
    main = config_write(directory=directory, listen=f"127.0.0.1:{port}", web_upstream=web_upstream, secret=secret)
    with (directory / "stderr.log").open("wb") as stderr:
        process = subprocess.Popen(
            [nginx(), "-p", str(directory), "-e", str(directory / "error.log"), "-c", str(main)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        port_wait(port, process, log=directory / "error.log")
        yield RunningProxy(base_url=f"http://127.0.0.1:{port}", directory=directory)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def port_wait(port: int, process: subprocess.Popen, *, log: Path, seconds: float = 15) -> None:
    """Until `process` accepts connections on `port`; a process that stopped instead is an error with the end
    of its `log`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} stopped ({process.returncode}): {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{process.args[0]} did not listen on 127.0.0.1:{port} within {seconds} s")
