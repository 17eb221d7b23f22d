#!/usr/bin/env python
"""Benchmark: the portal's ordinary pages while ten notebook sessions stream through nginx, against the same pages
without sessions, in one run.

The portal runs as in production: gunicorn with deploy/gunicorn.conf.py, a Celery worker per queue and beat, all
as the service account, behind nginx rendered from deploy/nginx/labqueue.conf.template (master as root, workers as
the service account). Ten sessions of the lab's students (student1..4 hold 3, 3, 2 and 2: the lab has four, and
the benchmark's own course allows three live jobs per student) are started through the assignment page, and each
is opened through nginx: its JupyterLab page, then a kernel whose cell prints a line every 50 ms over the
kernel's WebSocket for as long as the pages are measured. Prints Start -> Open per session (the click to the job
page's Open JupyterLab link), p50/p95 of the course page, a finished job's page and My jobs with 1 and 8 clients
through nginx with the sessions streaming and after they are stopped, the ratio, and the CPU seconds nginx and
gunicorn used meanwhile.

    .venv/bin/python scripts/bench_sessions.py [--requests 40] [--gpus 0]

Run it alone on the lab cluster: ten sessions take most of the lab's CPUs (its eight GPUs too with --gpus 1,
where two sessions wait). Uses its own database and Redis DB (scripts/benchlib.py);
stops every session it started and removes its run directory (logs kept). No fakes: JupyterLab is the lab's
(/opt/labqueue/jupyter, scripts/labcluster), started by Slurm as the students.
"""

import argparse
import base64
import json
import os
import re
import secrets
import shutil
import socket
import struct
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import benchlib

ACCOUNT = "cs101"
PARTITION = "gpu"
STUDENTS = ("student1", "student2", "student3", "student4")
#: Who holds the ten sessions: 3, 3, 2 and 2 over the lab's four students.
HOLDERS = ("student1", "student2", "student3", "student4") * 2 + ("student1", "student2")
SETUP = ". /opt/labqueue/jupyter/bin/activate"
PRINT_SECONDS = 0.05
CELL = f"""\
import time
line = 0
while True:
    line += 1
    print(f"line {{line}} " + "x" * 60, flush=True)
    time.sleep({PRINT_SECONDS})
"""
OPEN_WITHIN_SECONDS = 600


def portal_data(gpus: int):
    """The benchmark's course (three live jobs per student), its notebook and batch assignments, the students."""
    from courses.models import Assignment, Course, Role
    from jobs.models import Job
    from portal.models import User

    course, _ = Course.objects.get_or_create(
        slug="bench-sessions",
        defaults={"code": "BENCHNB", "title": "Notebook benchmark", "term": "-", "slurm_account": ACCOUNT},
    )
    Course.objects.filter(pk=course.pk).update(
        partition=PARTITION, max_gpus_per_job=1, max_queued_jobs_per_student=3, max_running_jobs_per_student=3
    )
    notebook, _ = Assignment.objects.update_or_create(
        course=course,
        slug="notebook",
        defaults={
            "title": "Notebook",
            "script_template": "echo preparing\n",
            "interactive": True,
            "parameters": [],
            **{"gpus": gpus, "cpus": 1, "mem_mb": 1000, "minutes": 30},
        },
    )
    batch, _ = Assignment.objects.update_or_create(
        course=course,
        slug="hello",
        defaults={"title": "Hello", "script_template": "echo hello\n", "parameters": [], "gpus": 0, "mem_mb": 100},
    )
    Job.objects.filter(assignment__course=course).delete()  # an earlier run's
    users = {}
    for name in STUDENTS:
        users[name], _ = User.objects.get_or_create(username=name, defaults={"netid": name, "password": "!"})
        course.enrollments.get_or_create(user=users[name], defaults={"role": Role.STUDENT})
    course.refresh_from_db()
    return course, notebook, batch, users


def browser(user):
    import requests
    from django.conf import settings
    from django.test import Client

    login = Client()
    login.force_login(user)
    session = requests.Session()
    session.cookies.set(settings.SESSION_COOKIE_NAME, login.cookies[settings.SESSION_COOKIE_NAME].value)
    return session


def submit(session, base: str, course, assignment, gpus: int) -> tuple[float, str]:
    """Press the assignment page's button (Start session or Submit job): (when, the job's uuid)."""
    page_url = f"{base}/courses/{course.slug}/assignments/{assignment.slug}/"
    page = session.get(page_url, timeout=120)
    assert page.status_code == 200, page.status_code
    fields = dict(re.findall(r'name="(csrfmiddlewaretoken|submission_key)" value="([^"]+)"', page.text))
    form = {"gpus": str(gpus), "cpus": "1", "mem_mb": str(assignment.mem_mb), "minutes": str(assignment.minutes)}
    clicked = time.monotonic()
    answer = session.post(page_url, data={**form, **fields}, headers={"Referer": page_url}, timeout=120)
    assert answer.status_code == 200 and "/jobs/" in answer.url, (answer.status_code, answer.text[-2000:])
    return clicked, answer.url.rstrip("/").rsplit("/", 1)[1]


def open_wait(session, base: str, job_uuid: str) -> float:
    """Poll the job page (as the page itself does, once a second) until it offers Open JupyterLab."""
    deadline = time.monotonic() + OPEN_WITHIN_SECONDS
    while time.monotonic() < deadline:
        page = session.get(f"{base}/jobs/{job_uuid}/", timeout=120)
        if f'href="/interactive/{job_uuid}/lab"' in page.text:
            return time.monotonic()
        time.sleep(1)
    raise SystemExit(f"session {job_uuid} was not open within {OPEN_WITHIN_SECONDS} s")


class KernelStream:
    """A kernel's WebSocket (/api/kernels/<id>/channels) through nginx, with the student's cookie and the portal's
    Origin, as JupyterLab opens it; a thread reads it and counts the lines the cell prints. RFC 6455 by hand (the
    handshake, masked frames out, pings answered): the requirements hold no WebSocket client."""

    def __init__(self, base: str, path: str, cookie: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.socket = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        handshake = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {base}\r\nCookie: {cookie}\r\n\r\n"
        )
        self.socket.sendall(handshake.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.socket.recv(4096)
            if not chunk:
                raise SystemExit(f"the WebSocket {path} closed during its handshake")
            head += chunk
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise SystemExit(f"the WebSocket {path} was refused: {status.decode()}")
        self.lines = 0
        self.messages = 0
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read_all, daemon=True)

    def send(self, text: str, opcode: int = 0x1) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
        elif size < 65536:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
        masked = bytes(byte ^ mask[number % 4] for number, byte in enumerate(payload))
        with self.lock:
            self.socket.sendall(header + mask + masked)

    def execute(self, code: str) -> None:
        header = {
            "msg_id": uuid.uuid4().hex,
            "username": "bench",
            "session": uuid.uuid4().hex,
            "msg_type": "execute_request",
            "version": "5.3",
        }
        content = {"code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False}
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"}
        self.send(json.dumps(message))
        self.reader.start()

    def _take(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self.socket.recv(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        taken, self.buffer = self.buffer[:size], self.buffer[size:]
        return taken

    def _read_all(self) -> None:
        self.socket.settimeout(None)
        try:
            while True:
                first, second = self._take(2)
                opcode, size = first & 0x0F, second & 0x7F
                if size == 126:
                    (size,) = struct.unpack("!H", self._take(2))
                elif size == 127:
                    (size,) = struct.unpack("!Q", self._take(8))
                payload = self._take(size)
                if opcode == 0x9:  # ping: the server closes a connection that does not answer
                    self.send(payload.decode("latin-1"), opcode=0xA)
                elif opcode == 0x8:
                    return
                elif opcode == 0x1:
                    message = json.loads(payload)
                    if message.get("msg_type") == "stream":
                        self.messages += 1
                        self.lines += message["content"]["text"].count("\n")
        except (EOFError, OSError):
            return

    def close(self) -> None:
        try:
            self.socket.close()
        except OSError:
            pass


def session_open(session, base: str, job_uuid: str) -> KernelStream:
    """Open the session through nginx: its JupyterLab page, a new kernel, the kernel's WebSocket running the cell."""
    from django.conf import settings

    root = f"{base}/interactive/{job_uuid}"
    lab = session.get(f"{root}/lab", timeout=120)
    assert lab.status_code == 200, (job_uuid, lab.status_code)
    kernel = session.post(f"{root}/api/kernels", json={"name": "python3"}, timeout=120)
    assert kernel.status_code == 201, (job_uuid, kernel.status_code, kernel.text[:500])
    cookie = f"{settings.SESSION_COOKIE_NAME}={session.cookies[settings.SESSION_COOKIE_NAME]}"
    path = f"/interactive/{job_uuid}/api/kernels/{kernel.json()['id']}/channels?session_id={uuid.uuid4().hex}"
    stream = KernelStream(base, path, cookie)
    stream.execute(CELL)
    return stream


def latencies(sessions: list, url: str, clients: int, requests: int) -> list[float]:
    def one(number: int) -> float:
        started = time.perf_counter()
        answer = sessions[number % clients].get(url, timeout=120)
        assert answer.status_code == 200, (url, answer.status_code)
        return time.perf_counter() - started

    sessions[0].get(url, timeout=120)  # warm
    with ThreadPoolExecutor(max_workers=clients) as pool:
        return list(pool.map(one, range(requests)))


def cpu_seconds(session_id: int) -> float:
    """User and system CPU seconds of the live processes of a session (a process this benchmark started and
    everything it started)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session_id:  # field 6 of stat: the session id
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def pages_measure(pages: list[tuple[str, str]], browsers: list, requests: int, processes: dict) -> tuple[dict, dict]:
    """Per page, latencies with 1 and 8 clients; and the CPU seconds each of `processes` used meanwhile."""
    before = {name: cpu_seconds(process.pid) for name, process in processes.items()}
    figures = {}
    for label, url in pages:
        figures[label] = (latencies(browsers, url, 1, requests), latencies(browsers, url, 8, requests))
    used = {name: cpu_seconds(process.pid) - before[name] for name, process in processes.items()}
    return figures, used


def nginx_start(env: dict[str, str], run_dir: Path, web_port: int, secret: str) -> tuple[subprocess.Popen, int]:
    """nginx from the shipped template (the README's envsubst command) in front of gunicorn, in the foreground."""
    directory = run_dir / "nginx"
    directory.mkdir(mode=0o700)  # root's while the configuration, with the proxy secret, is written
    port = benchlib.free_port()
    values = {
        "LABQUEUE_PROXY_LISTEN": f"127.0.0.1:{port}",
        "LABQUEUE_WEB_UPSTREAM": f"127.0.0.1:{web_port}",
        "LABQUEUE_INTERACTIVE_PROXY_SECRET": secret,
    }
    subprocess.run(
        [benchlib.REPO / "scripts" / "nginx-config", str(directory), benchlib.SERVICE_ACCOUNT],
        env={"PATH": env["PATH"], **values},
        check=True,
    )
    shutil.chown(directory, group=benchlib.SERVICE_ACCOUNT)
    directory.chmod(0o750)  # nginx's workers (the service account) keep their buffers in it
    argv = ["nginx", "-p", str(directory), "-e", str(directory / "error.log"), "-c", str(directory / "nginx.conf")]
    with open(run_dir / "nginx.log", "ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, port
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"nginx did not start: {(directory / 'error.log').read_text()[-2000:]}") from None
            time.sleep(0.1)


def finished_job(session, base: str, course, batch) -> str:
    """One batch job of student1's through the portal, to its end: the job page measured."""
    from jobs.models import Job

    _, job_uuid = submit(session, base, course, batch, gpus=0)
    deadline = time.monotonic() + 300
    while not Job.objects.get(uuid=job_uuid).is_terminal:
        if time.monotonic() > deadline:
            raise SystemExit(f"the batch job {job_uuid} did not finish within 300 s")
        time.sleep(1)
    return job_uuid


def sessions_stop(browsers: dict, base: str, jobs: list[tuple[str, str]]) -> None:
    """Stop session (the job page's button) for each, then wait until the portal saw every job end."""
    from jobs.models import Job

    for holder, job_uuid in jobs:
        session = browsers[holder]
        page = session.get(f"{base}/jobs/{job_uuid}/", timeout=120)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        session.post(
            f"{base}/jobs/{job_uuid}/cancel/",
            data={"csrfmiddlewaretoken": token},
            headers={"Referer": f"{base}/jobs/{job_uuid}/"},
            timeout=120,
        )
    deadline = time.monotonic() + 300
    uuids = [job_uuid for _, job_uuid in jobs]
    while any(not job.is_terminal for job in Job.objects.filter(uuid__in=uuids)):
        if time.monotonic() > deadline:
            raise SystemExit("the sessions did not end within 300 s of Stop session")
        time.sleep(1)


def row(label: str, without: tuple[list[float], list[float]], loaded: tuple[list[float], list[float]]) -> str:
    p = benchlib.percentile
    cells = []
    for one, eight in (without, loaded):
        ms = [p(one, 0.5), p(one, 0.95), p(eight, 0.5), p(eight, 0.95)]
        cells.append("{:3.0f} {:5.0f} | {:3.0f} {:5.0f}".format(*(value * 1000 for value in ms)))
    ratios = f"{p(loaded[0], 0.95) / p(without[0], 0.95):7.2f}x {p(loaded[1], 0.95) / p(without[1], 0.95):9.2f}x"
    return f"{label:<12} {cells[0]:<25} {cells[1]:<25} {ratios}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40, help="requests per page and concurrency")
    parser.add_argument("--gpus", type=int, default=0, choices=(0, 1), help="GPUs per session (the lab has 8)")
    options = parser.parse_args()
    benchlib.root_required()
    secret = secrets.token_urlsafe(48)
    env = benchlib.setup_django(
        LABQUEUE_DEMO="0",
        LABQUEUE_DEBUG="0",
        LABQUEUE_SYNC_SECONDS="2",
        LABQUEUE_LAB_TICK_SECONDS="3600",
        LABQUEUE_RECONCILE_SECONDS="3600",
        LABQUEUE_USAGE_INGEST_SECONDS="3600",
        LABQUEUE_INTERACTIVE_SETUP=SETUP,
        LABQUEUE_INTERACTIVE_PROXY_SECRET=secret,
    )
    benchlib.redis_flush()
    from jobs.models import Job

    course, notebook, batch, users = portal_data(options.gpus)
    run_dir = Path(env["BENCH_RUN_DIR"])
    print(f"logs in {run_dir}")
    processes: dict[str, subprocess.Popen] = {}
    streams: list[KernelStream] = []
    try:
        portal, web_port = benchlib.portal_start(env, run_dir)
        processes.update(portal)
        processes["nginx"], port = nginx_start(env, run_dir, web_port, secret)
        base = f"http://127.0.0.1:{port}"
        browsers = {name: browser(user) for name, user in users.items()}
        watched = {"nginx": processes["nginx"], "gunicorn": processes["gunicorn"]}
        reader = [browser(users["student1"]) for _ in range(8)]  # student1's pages, as 8 browsers
        job_uuid = finished_job(browsers["student1"], base, course, batch)
        pages = [
            ("course page", f"{base}/courses/{course.slug}/"),
            ("job page", f"{base}/jobs/{job_uuid}/"),
            ("My jobs", f"{base}/jobs/"),
        ]

        # Ten students press Start session at once, then each waits on the job page for Open JupyterLab.
        def start_and_wait(holder: str) -> tuple[str, str, float]:
            clicked, started_uuid = submit(browsers[holder], base, course, notebook, options.gpus)
            return holder, started_uuid, open_wait(browsers[holder], base, started_uuid) - clicked

        with ThreadPoolExecutor(max_workers=len(HOLDERS)) as pool:
            started = list(pool.map(start_and_wait, HOLDERS))
        for holder, started_uuid, _ in started:
            streams.append(session_open(browsers[holder], base, started_uuid))
        deadline = time.monotonic() + 120
        while min(stream.lines for stream in streams) < 20:
            if time.monotonic() > deadline:
                raise SystemExit(f"not every cell printed: {[stream.lines for stream in streams]}")
            time.sleep(0.5)

        lines_before, clock = sum(stream.lines for stream in streams), time.monotonic()
        loaded, loaded_cpu = pages_measure(pages, reader, options.requests, watched)
        lines, seconds = sum(stream.lines for stream in streams) - lines_before, time.monotonic() - clock
        messages = sum(stream.messages for stream in streams)
        alive = sum(1 for stream in streams if stream.reader.is_alive())

        for stream in streams:
            stream.close()
        sessions_stop(browsers, base, [(holder, started_uuid) for holder, started_uuid, _ in started])
        without, without_cpu = pages_measure(pages, reader, options.requests, watched)

        opened = [seconds_to_open for _, _, seconds_to_open in started]
        print(
            f"Load: {len(HOLDERS)} notebook sessions of {len(STUDENTS)} lab students (3-3-2-2), "
            f"{options.gpus or 'no'} GPU, 1 CPU, 1000 MB each, started at once through the assignment page; "
            "each opened through nginx (its JupyterLab page, a kernel) with a cell printing a 70-byte line every "
            f"{PRINT_SECONDS * 1000:.0f} ms over the kernel's WebSocket. Pages as student1 through nginx, "
            f"{options.requests} requests per page with 1 client and with 8."
        )
        print(f"Start -> Open (s): {' '.join(f'{value:.1f}' for value in sorted(opened))}")
        print(f"Start -> Open: {benchlib.summary(opened)}")
        print(
            f"Streamed while measuring: {lines} lines in {seconds:.1f} s ({lines / seconds:.0f} lines/s over "
            f"{alive} open WebSockets; {messages} stream messages in all)"
        )
        print(f"{'':<12} {'without sessions':<25} {'with 10 streaming':<25} p95 with/without")
        print(f"{'page (ms)':<12} {'p50   p95 | p50   p95':<25} {'p50   p95 | p50   p95':<25} 1 client  8 clients")
        print(f"{'':<12} {'1 client  | 8 clients':<25} {'1 client  | 8 clients':<25}")
        for label, _ in pages:
            print(row(label, without[label], loaded[label]))
        print(
            f"CPU seconds while measuring: without sessions nginx {without_cpu['nginx']:.1f}, gunicorn "
            f"{without_cpu['gunicorn']:.1f}; with 10 streaming nginx {loaded_cpu['nginx']:.1f}, gunicorn "
            f"{loaded_cpu['gunicorn']:.1f}"
        )
    finally:
        for stream in streams:
            stream.close()
        slurm_ids = list(
            Job.objects.filter(assignment__course=course)
            .exclude(slurm_job_id="")
            .values_list("slurm_job_id", flat=True)
        )
        if slurm_ids:
            subprocess.run(["scancel", *slurm_ids], capture_output=True, check=False)
        for process in processes.values():
            benchlib.stop(process)
        benchlib.run_dir_remove(env)
        shutil.rmtree(run_dir / "beat", ignore_errors=True)
        (run_dir / "nginx" / "labqueue.conf").unlink(missing_ok=True)  # the proxy secret


if __name__ == "__main__":
    main()
