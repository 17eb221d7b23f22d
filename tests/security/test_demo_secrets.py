"""The demo on a host where students' jobs run: what `scripts/demo --prepare-only` writes, the step of
scripts/demo that makes an install's secrets and configuration before anything starts.

An attacker here is a student with a shell on the demo host (their job, or a login): they may read any file
their uid can, connect to anything on 127.0.0.1 and know the repository's defaults. The secrets are checked
by reading them as a student, the broker by a real redis-server started from the demo's own configuration,
DEBUG by the portal's settings loaded from the environment the demo gives its processes. The caller's
environment holds the test run's well-known URLs (the repository's `labqueue:labqueue` role, Redis on 6379):
the demo must use none of them. Nothing listens on the database port given, so no step here reaches a database.
"""

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from tests.service_account import MEDIA_BASE, REPO, SERVICE_ACCOUNT, _start, free_port, service_argv, stop

pytestmark = pytest.mark.timeout(180)

SECRETS = ("secret-key", "postgresql-password", "redis-password", "interactive-proxy-secret")
#: What a student knows from the repository: its default passwords and keys, and the test run's.
KNOWN = {"labqueue", "labqueue-demo", "test-only-secret", "insecure-development-key-only-for-debug", ""}
CALLER = {
    "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    "LANG": "C.UTF-8",
    "DATABASE_URL": "postgresql://labqueue:labqueue@127.0.0.1:1/labqueue",
    "LABQUEUE_REDIS_URL": "redis://127.0.0.1:6379/15",
    "LABQUEUE_SECRET_KEY": "test-only-secret",
}


@pytest.fixture
def installs() -> Iterator[list[Path]]:
    """Places for demo installs of this test's own, where the service account may reach them (pytest's
    tmp_path is root's alone)."""
    MEDIA_BASE.mkdir(parents=True, exist_ok=True)
    base = MEDIA_BASE / f"demo-{uuid.uuid4().hex[:12]}"
    base.mkdir(mode=0o755)
    yield [base / "one", base / "two"]
    shutil.rmtree(base, ignore_errors=True)


def prepare(state: Path, *args: str, **env: str) -> None:
    """`scripts/demo --prepare-only ARGS` into `state`, in a session of its own: whatever it starts is stopped."""
    environment = {**CALLER, "LABQUEUE_DEMO_STATE": str(state), **env}
    argv = [str(REPO / "scripts" / "demo"), "--prepare-only", *args]
    process = subprocess.Popen(
        argv,
        env=environment,
        cwd=REPO,
        start_new_session=True,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        output, _ = process.communicate(timeout=90)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert process.returncode == 0, output


def portal_env(state: Path) -> dict[str, str]:
    """The environment the demo gives the portal's processes (`<state>/portal.env`, read as the shell reads it)."""
    script = 'set -e; . "$1"; env -0'
    done = subprocess.run(
        ["bash", "-c", script, "-", str(state / "portal.env")],
        env={"PATH": CALLER["PATH"]},
        capture_output=True,
        check=True,
    )
    pairs = (item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    return {name: value for name, value in pairs if name.startswith(("LABQUEUE_", "DATABASE_URL"))}


def secrets_of(state: Path) -> dict[str, str]:
    return {name: (state / "secrets" / name).read_text().strip() for name in SECRETS}


def in_demo_portal(state: Path, code: str) -> dict:
    """The JSON that Python `code` prints in a portal process of the demo: the service account, Django set up
    from the environment the demo gives its processes."""
    env = {"PATH": CALLER["PATH"], "LANG": "C.UTF-8", "DJANGO_SETTINGS_MODULE": "portal.settings"}
    program = "import django, json\ndjango.setup()\nfrom django.conf import settings\n" + code
    done = subprocess.run(
        service_argv(sys.executable, "-c", program),
        env={**env, **portal_env(state)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def settings_of(state: Path) -> dict:
    """What the portal's own settings module makes of the demo's environment."""
    database = "settings.DATABASES['default']"
    return in_demo_portal(
        state,
        f"print(json.dumps({{'debug': settings.DEBUG, 'key': settings.SECRET_KEY, 'db_user': {database}['USER'],"
        f" 'db_password': {database}['PASSWORD'], 'broker': settings.CELERY_BROKER_URL}}))",
    )


def said(port: int, commands: bytes) -> bytes:
    """What the Redis on `port` answers a client that connects and sends `commands` (the protocol's inline form)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        client.sendall(commands)
        time.sleep(0.2)
        return client.recv(4096)


def test_a_student_cannot_read_the_demos_secrets_or_the_files_that_hold_them(installs):
    [state, _] = installs
    prepare(state)
    account = pwd.getpwnam(SERVICE_ACCOUNT)
    private = [state / "secrets" / name for name in SECRETS] + [state / "redis.conf", state / "portal.env"]
    for path in [state / "secrets", *private]:
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (account.pw_uid, account.pw_gid), path
        assert info.st_mode & 0o077 == 0, f"{path}: mode {oct(info.st_mode)} lets others read it"
    assert state.stat().st_mode & 0o007 == 0, "the demo's state is closed to other accounts"
    for path in private:
        read = subprocess.run(["runuser", "-u", "student1", "--", "cat", str(path)], capture_output=True, text=True)
        assert read.returncode != 0 and read.stdout == "", f"student1 read {path}"


def test_each_install_makes_its_own_secrets_that_no_repository_default_is_and_keeps_them(installs):
    [one, two] = installs
    prepare(one)
    prepare(two)
    first, second = secrets_of(one), secrets_of(two)
    for name in SECRETS:
        assert first[name] != second[name], f"two installs share the {name}"
        assert first[name] not in KNOWN and len(first[name]) >= 50, name
    prepare(one)
    assert secrets_of(one) == first, "a second start of the same install keeps its secrets (and sessions)"


def test_the_portal_uses_the_demos_own_secrets_not_the_repositorys_or_the_callers(installs):
    [state, _] = installs
    prepare(state)
    secrets, settings = secrets_of(state), settings_of(state)
    assert settings["key"] == secrets["secret-key"]
    assert settings["db_user"] != "labqueue", "the demo has a database role of its own"
    assert settings["db_password"] == secrets["postgresql-password"]
    broker = urlsplit(settings["broker"])
    assert broker.password == secrets["redis-password"]
    assert (broker.hostname, broker.port) != ("127.0.0.1", 6379), "the demo's broker is not the tests' shared Redis"


def test_debug_is_off_unless_the_demo_is_started_with_debug(installs):
    [state, _] = installs
    prepare(state)
    assert settings_of(state)["debug"] is False
    prepare(state, "--debug")
    assert settings_of(state)["debug"] is True
    prepare(state)
    assert settings_of(state)["debug"] is False, "--debug lasts one start, not the install"


def test_the_demos_redis_refuses_a_client_without_its_password(installs):
    [state, _] = installs
    port = free_port()
    prepare(state, LABQUEUE_DEMO_REDIS_PORT=str(port))
    config = (state / "redis.conf").read_text().splitlines()
    assert "bind 127.0.0.1" in config
    server = _start(
        service_argv("redis-server", str(state / "redis.conf")), {"PATH": CALLER["PATH"]}, state / "redis-test.log"
    )
    try:
        broker = redis.Redis.from_url(portal_env(state)["LABQUEUE_REDIS_URL"], socket_timeout=5)
        deadline = time.monotonic() + 20
        while True:
            try:
                assert broker.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, (state / "redis-test.log").read_text()
                time.sleep(0.2)
        assert broker.connection_pool.connection_kwargs["port"] == port
        assert said(port, b"PING\r\n").startswith(b"-NOAUTH"), "a client without the password is refused"
        assert said(port, b"AUTH labqueue\r\nPING\r\n").startswith(b"-WRONGPASS"), "and one with a default"
    finally:
        stop(server)


def test_with_debug_off_the_demo_still_serves_the_stylesheet_its_pages_link(installs):
    [state, _] = installs
    prepare(state)
    served = in_demo_portal(
        state,
        "from django.templatetags.static import static\nfrom django.test import Client\n"
        "url = static('labqueue.css')\nanswer = Client().get(url, HTTP_HOST='127.0.0.1')\n"
        "body = b''.join(answer.streaming_content) if answer.streaming else answer.content\n"
        "print(json.dumps({'debug': settings.DEBUG, 'url': url, 'status': answer.status_code,"
        " 'type': answer.get('Content-Type', ''), 'size': len(body)}))",
    )
    assert served["debug"] is False
    assert served["status"] == 200, served
    assert served["type"].startswith("text/css") and served["size"] > 0, served
