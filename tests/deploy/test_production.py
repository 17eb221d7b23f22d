"""The portal in production mode, started from the systemd units' own ExecStart lines (deploy/systemd/), with
the install path replaced by this checkout: migrate, collectstatic, then gunicorn, the Celery worker and
Celery beat, each as the unprivileged service account the unit names, on PostgreSQL and Redis, with DEBUG
off, LABQUEUE_SECURE=1 behind a TLS proxy and the run-as prefix `sudo -n -u {user}`. A student signs in
over HTTP (through the proxy: X-Forwarded-Proto: https), submits, and the job runs on the lab cluster with
nobody sending anything by hand: beat's job-status sync, run by the worker, sees it finish. The results
zip is downloaded and /readyz answers 200 once beat and the worker have done their periodic work.
"""

import io
import re
import subprocess
import time
import zipfile
from collections.abc import Iterator
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path

import pytest
import requests
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from jobs.models import Job, Status
from tests.conftest import submit_form
from tests.deploy.units import REPO, environment, exec_start, service
from tests.http_helpers import celery_queue_clear
from tests.service_account import (
    SERVICE_ACCOUNT,
    Portal,
    _start,
    free_port,
    service_argv,
    service_env,
    stop,
)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.timeout(420)]

PASSWORD = "a-student-password-for-this-test"
UNITS = {"web": "labqueue-web.service", "worker": "labqueue-worker@.service", "beat": "labqueue-beat.service"}
#: The worker template's instances a site enables (README "Operators: install"): one per queue.
QUEUES = ("submit", "sync", "maintenance")


class BrowserBehindTlsProxy(requests.Session):
    """A browser on https://<portal> whose requests reach gunicorn through the site's TLS proxy: the proxy
    adds X-Forwarded-Proto: https, and what the browser sends about pages (Referer, which Django's CSRF check
    compares over HTTPS) and which cookies it returns (the Secure ones) are those of an https:// site."""

    def __init__(self) -> None:
        super().__init__()
        self.headers["X-Forwarded-Proto"] = "https"

    def request(self, method, url, headers=None, **kwargs):
        headers = dict(headers or {})
        if "Referer" in headers:
            headers["Referer"] = headers["Referer"].replace("http://", "https://", 1)
        return super().request(method, url, headers=headers, **kwargs)

    def prepare_request(self, request):
        prepared = super().prepare_request(request)
        jar = requests.cookies.RequestsCookieJar(policy=DefaultCookiePolicy(secure_protocols=("https", "http")))
        jar.update(self.cookies)
        prepared.headers.pop("Cookie", None)
        prepared.prepare_cookies(jar)  # the Secure cookies too: the browser's side of the proxy is HTTPS
        return prepared


METRICS_TOKEN = "scraper-token-for-this-test"


def production_env(settings, media: Path, port: int) -> dict[str, str]:
    """/etc/labqueue/labqueue.env for this test: the service account's environment (this test's database,
    broker, job root, media root, the sudo run-as prefix) with the production settings."""
    return service_env(
        settings,
        LABQUEUE_DEBUG="0",
        LABQUEUE_SECURE="1",
        LABQUEUE_BEHIND_TLS_PROXY="1",
        LABQUEUE_LOCAL_PASSWORDS="1",
        LABQUEUE_METRICS_TOKEN=METRICS_TOKEN,
        LABQUEUE_STATIC_ROOT=str(media / "static"),
        LABQUEUE_WEB_BIND=f"127.0.0.1:{port}",
        LABQUEUE_WEB_WORKERS="2",
        LABQUEUE_WEB_THREADS="2",
        LABQUEUE_SYNC_SECONDS="2",
        LABQUEUE_USAGE_INGEST_SECONDS="10",
        LABQUEUE_RECONCILE_SECONDS="20",
    )


def run_as_service(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """A one-shot command as the service account (what `systemctl start` of a oneshot unit, or an operator's
    `sudo -u labqueue`, runs), failing the test if it does not succeed."""
    result = subprocess.run(
        service_argv(*argv), env=env, cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{argv}: {result.stdout}{result.stderr}"
    return result


@pytest.fixture
def production(settings, service_media, tmp_path) -> Iterator[Portal]:
    celery_queue_clear()
    port = free_port()
    env = production_env(settings, service_media, port)
    env["LABQUEUE_BEAT_SCHEDULE"] = str(service_media / "celerybeat-schedule")
    for unit in [*UNITS.values(), "labqueue-migrate.service"]:
        assert service(unit)["User"] == [SERVICE_ACCOUNT], f"{unit} runs as the service account"
        assert service(unit)["WorkingDirectory"] == ["/opt/labqueue"], unit
        assert service(unit)["EnvironmentFile"] == ["/etc/labqueue/labqueue.env"], unit

    # The migrate unit (the test database is migrated already: its line must agree), then the web unit's
    # ExecStartPre, which collects the static files the web server serves.
    migrated = run_as_service(exec_start("labqueue-migrate.service"), env)
    assert "No migrations to apply" in migrated.stdout, migrated.stdout
    web_env = {**environment(UNITS["web"]), **env}
    run_as_service(exec_start(UNITS["web"], "ExecStartPre"), web_env)

    portal = Portal(settings=settings, logs=tmp_path, env=env, base=f"http://127.0.0.1:{port}")
    portal.web = _start(service_argv(*exec_start(UNITS["web"])), web_env, tmp_path / "web.log")
    for queue in QUEUES:
        argv = exec_start(UNITS["worker"], instance=queue)
        unit_env = {**environment(UNITS["worker"]), **env}
        portal.workers.append(_start(service_argv(*argv), unit_env, tmp_path / "worker.log"))
    beat_env = {**environment(UNITS["beat"]), **env}
    portal.workers.append(_start(service_argv(*exec_start(UNITS["beat"])), beat_env, tmp_path / "beat.log"))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(portal.base + "/healthz", timeout=5, allow_redirects=False)
                break
            except requests.RequestException:
                assert portal.web.poll() is None, (tmp_path / "web.log").read_text()
                assert time.monotonic() < deadline, (tmp_path / "web.log").read_text()
                time.sleep(0.2)
        yield portal
    finally:
        for process in [portal.web, *portal.workers]:
            stop(process)
        for name in ("web.log", "worker.log", "beat.log"):
            print(f"--- {name}\n" + (tmp_path / name).read_text(errors="replace")[-4000:])


def sign_in(portal: Portal, username: str) -> BrowserBehindTlsProxy:
    browser = BrowserBehindTlsProxy()
    page = browser.get(f"{portal.base}/accounts/login/", timeout=30)
    assert page.status_code == 200, page.text[:2000]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    signed_in = browser.post(
        f"{portal.base}/accounts/login/",
        data={"login": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": page.url},
        timeout=30,
        allow_redirects=False,
    )
    assert signed_in.status_code == 302, signed_in.text[:2000]
    [session] = [cookie for cookie in browser.cookies if cookie.name == "sessionid"]
    assert session.secure, "the session cookie is sent over HTTPS only"
    return browser


def wait_until_ready(portal: Portal, browser: requests.Session, timeout: float = 150) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        answer = browser.get(f"{portal.base}/readyz", timeout=30)
        if answer.status_code == 200:
            return answer.json()
        assert answer.status_code == 503, answer.text[:2000]
        assert time.monotonic() < deadline, f"/readyz still 503: {answer.json()}"
        time.sleep(2)  # a poll interval, not a wait: each /readyz asks the database, broker and worker anew


def test_a_student_signs_in_submits_and_downloads_results_from_the_units_as_installed(student, assignment, production):
    portal = production
    student.password = PBKDF2PasswordHasher().encode(PASSWORD, PBKDF2PasswordHasher().salt())
    student.save(update_fields=["password"])
    plain = requests.get(f"{portal.base}/accounts/login/", timeout=30, allow_redirects=False)
    assert plain.status_code == 301 and plain.headers["Location"].startswith("https://"), "plain HTTP goes to HTTPS"

    browser = sign_in(portal, "student1")
    home = browser.get(f"{portal.base}/", timeout=30)
    assert home.status_code == 200 and "Strict-Transport-Security" in home.headers
    [stylesheet] = re.findall(r'href="(/static/labqueue\.[0-9a-f]{12}\.css)"', home.text)
    styles = browser.get(portal.base + stylesheet, headers={"Accept-Encoding": "gzip"}, timeout=30)
    assert styles.status_code == 200 and styles.headers.get("Content-Encoding") == "gzip"
    assert "immutable" in styles.headers["Cache-Control"], "hashed static files are cached for good"

    sent = portal.submit(browser, "cs101", "hello", submit_form())
    assert sent.status_code == 302, sent.text[:2000]
    job = Job.objects.get(user=student)
    deadline = time.monotonic() + 180
    while not job.is_terminal:  # the worker sends it; beat's sync, run by the worker, follows it to the end
        assert time.monotonic() < deadline, f"job still {job.status}: {job.message}"
        time.sleep(1)
        job.refresh_from_db()
    assert job.status == Status.COMPLETED, job.message

    archive = browser.get(f"{portal.base}/jobs/{job.uuid}/download.zip", timeout=60)
    assert archive.status_code == 200 and archive.headers["Content-Type"] == "application/zip"
    contents = zipfile.ZipFile(io.BytesIO(archive.content))
    folder = f"hello-{str(job.uuid)[:8]}"
    assert contents.read(f"{folder}/results/out.txt") == b"done run\n"
    assert "user=student1" in contents.read(f"{folder}/job.out").decode(), "the job ran as the student"

    ready = wait_until_ready(portal, browser)
    assert all(check["ok"] for check in ready["checks"].values()), ready

    scraper = BrowserBehindTlsProxy()
    refused = scraper.get(f"{portal.base}/metrics", timeout=30)
    assert refused.status_code == 403, "no token, no metrics"
    scraped = scraper.get(f"{portal.base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30)
    assert scraped.status_code == 200, scraped.text[:2000]
    assert 'labqueue_jobs{status="completed"} 1.0' in scraped.text
    assert re.search(r'labqueue_slurm_command_seconds_count\{tool="sbatch"\} [1-9]', scraped.text), scraped.text
    assert "labqueue_job_sync_lag_seconds" in scraped.text and "labqueue_celery_queue_length" in scraped.text

    # /readyz answered 503 while the periodic work had not run yet, as it should: any other 5xx is an error.
    web_log = (portal.logs / "web.log").read_text(errors="replace")
    errors = [line for line in portal.server_errors() if "GET /readyz " not in line]
    assert errors == [] and "Traceback" not in web_log and "Internal Server Error" not in web_log, web_log[-4000:]
