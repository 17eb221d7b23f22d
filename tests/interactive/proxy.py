"""nginx in front of a test's portal, as production runs it: the shipped deploy/nginx/labqueue.conf.template,
rendered by the `envsubst` command the README gives, under a main nginx.conf (scripts/nginx-config: in the
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


@dataclass(frozen=True)
class RunningProxy:
    base_url: str
    directory: Path

    def error_log(self) -> str:
        return (self.directory / "error.log").read_text()


def nginx() -> str:
    return shutil.which("nginx") or "/usr/sbin/nginx"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def config_write(*, directory: Path, listen: str, web_upstream: str, secret: str) -> Path:
    """nginx.conf and labqueue.conf in `directory`, written by scripts/nginx-config (the demo's and the benchmark's
    renderer too), which fails unless nginx -t accepts them."""
    directory.mkdir(parents=True, exist_ok=True)
    values = {
        "LABQUEUE_PROXY_LISTEN": listen,
        "LABQUEUE_WEB_UPSTREAM": web_upstream,
        "LABQUEUE_INTERACTIVE_PROXY_SECRET": secret,
    }
    # As root, nginx's workers would otherwise run as nobody, who cannot enter a test's temporary directory.
    worker = ["root"] if os.geteuid() == 0 else []
    written = subprocess.run(
        [REPO / "scripts" / "nginx-config", str(directory), *worker],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **values},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert written.returncode == 0, f"scripts/nginx-config refused the rendered template:\n{written.stderr}"
    return directory / "nginx.conf"


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
