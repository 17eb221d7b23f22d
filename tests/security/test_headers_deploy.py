"""The production settings (LABQUEUE_SECURE=1 behind a TLS proxy) over real HTTP: the portal served by
gunicorn, as the image runs it, redirects plain HTTP to HTTPS and answers HTTPS with HSTS (its age a
setting), secure cookies and the Content Security Policy; and `manage.py check --deploy` finds nothing
but the one warning we keep on purpose (README, "Pointing it at a real cluster")."""

import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.db import connection

REPO = Path(__file__).resolve().parents[2]
#: HSTS preload is a promise for the whole registrable domain (example.edu), not this host's to make.
KEPT_WARNINGS = {"security.W021"}


def production_env(**extra) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "LABQUEUE_SECURE": "1",
        "LABQUEUE_BEHIND_TLS_PROXY": "1",
        "LABQUEUE_SECRET_KEY": secrets.token_urlsafe(50),
        "LABQUEUE_ALLOWED_HOSTS": "127.0.0.1",
        **extra,
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def production_portal(django_db_setup, tmp_path):
    """gunicorn on the test database, with the production security settings and a 10-minute HSTS."""
    db = connection.settings_dict
    assert connection.vendor == "postgresql", "a second process needs a database it can reach"
    database_url = f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    port = _free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "portal.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=REPO,
        env=production_env(DATABASE_URL=database_url, LABQUEUE_HSTS_SECONDS="600"),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            requests.get(url, timeout=2, allow_redirects=False)
            break
        except requests.ConnectionError:
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "gunicorn.log").read_text()
            time.sleep(0.2)
    yield url
    server.terminate()
    server.wait(timeout=10)


def test_plain_http_is_redirected_to_https(production_portal):
    response = requests.get(f"{production_portal}/accounts/login/", timeout=10, allow_redirects=False)

    assert response.status_code == 301
    assert response.headers["Location"] == production_portal.replace("http://", "https://") + "/accounts/login/"


def test_https_answers_carry_hsts_secure_cookies_and_the_policy(production_portal):
    response = requests.get(f"{production_portal}/accounts/login/", headers={"X-Forwarded-Proto": "https"}, timeout=10)

    assert response.status_code == 200
    assert response.headers["Strict-Transport-Security"] == "max-age=600; includeSubDomains"
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    [csrf] = [cookie for cookie in response.cookies if cookie.name == "csrftoken"]
    assert csrf.secure


def test_check_deploy_finds_only_the_warning_kept_on_purpose():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=REPO,
        env=production_env(LABQUEUE_ALLOWED_HOSTS="labqueue.example.edu"),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    found = {word.strip("():") for word in result.stderr.split() if word.startswith("(") and "." in word}
    assert found == KEPT_WARNINGS, result.stderr
