"""On the lab cluster: a known mix of jobs, ingested, reported and reconciled against sacct.

The course uses account cs103, which no other test uses, and the report covers only
this test's own minutes, so jobs of other tests do not count. The expected GPU-hours are
computed here straight from `sacct` output, without the adapter's parsers.
"""

import csv
import io
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment, Course, Role
from courses.scripting import Resources
from jobs import services
from jobs.dispatch import job_scancel
from jobs.models import Status
from reports.course_report import course_report
from reports.ingest import usage_ingest
from reports.models import UsageRecord
from reports.queries import ReportRange, Usage
from slurm import runner
from slurm.states import LIVE_STATES
from tests.conftest import dispatch, make_user, wait_for_status

pytestmark = pytest.mark.slurm

SCRIPT = 'sleep "$SLEEP"\nexit "$CODE"\n'
PARAMETERS = [
    {"name": "SLEEP", "type": "int", "default": 2, "min": 0, "max": 120},
    {"name": "CODE", "type": "int", "default": 0, "min": 0, "max": 3},
]


@pytest.fixture
def lab_course(db) -> Course:
    return Course.objects.create(
        slug="gpu-lab",
        code="GPU200",
        title="GPU Lab",
        term="Fall",
        slurm_account="cs103",
        partition="gpu",
        max_gpus_per_job=2,
        max_cpus_per_job=2,
        max_mem_mb_per_job=1000,
        max_minutes_per_job=5,
    )


@pytest.fixture
def train(lab_course) -> Assignment:
    return Assignment.objects.create(
        course=lab_course, slug="train", title="Train", script_template=SCRIPT, parameters=PARAMETERS
    )


@pytest.fixture
def people(lab_course):
    people = {}
    for name, role in (("student1", Role.STUDENT), ("student2", Role.STUDENT), ("instructor1", Role.INSTRUCTOR)):
        people[name] = make_user(name, name)
        lab_course.enrollments.create(user=people[name], role=role)
    return people


def submit(user, assignment, *, gpus: int, sleep: int, code: int = 0):
    job = services.job_submit(
        user=user,
        assignment=assignment,
        values={"SLEEP": sleep, "CODE": code},
        resources=Resources(gpus=gpus, cpus=1, mem_mb=200, minutes=2),
    )
    return dispatch(job)


def sacct_gpu_seconds_by_user(start: datetime, end: datetime) -> dict[str, int]:
    """GPU-seconds per user on cs103 in [start, end), from sacct's own output."""
    argv = ["sacct", "-a", "-X", "-P", "-n", "-A", "cs103", "-o", "User,AllocTRES,Start,End"]
    argv += ["-S", start.strftime("%Y-%m-%dT%H:%M:%S"), "-E", end.strftime("%Y-%m-%dT%H:%M:%S")]
    stdout = runner.run(argv, env_extra={"SLURM_TIME_FORMAT": "%s", "TZ": "UTC"})
    totals: dict[str, int] = defaultdict(int)
    for line in stdout.splitlines():
        user, tres, job_start, job_end = line.split("|")
        gpus = dict(item.split("=", 1) for item in tres.split(",") if "=" in item).get("gres/gpu", "0")
        if not job_start.isdigit():
            continue
        job_end = int(job_end) if job_end.isdigit() else int(time.time())
        overlap = min(job_end, int(end.timestamp())) - max(int(job_start), int(start.timestamp()))
        totals[user] += int(gpus) * max(overlap, 0)
    return {user: seconds for user, seconds in totals.items() if seconds}


FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE"}


def wait_in_sacct(job_id: str, timeout: float = 90) -> None:
    """Until sacct gives the job a final state (jobs here are sent with --no-requeue, so it stays final)."""
    deadline = time.monotonic() + timeout
    while True:
        out = runner.run(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State"])
        if out.strip() and out.split()[0] in FINAL_STATES:
            return
        assert time.monotonic() < deadline, f"job {job_id} did not finish: {out!r}"
        time.sleep(0.5)


def ingest_until_seen(job_ids: list[str], timeout: float = 30):
    """Run ingest cycles until every job is copied.

    slurmdbd answers a windowed sacct (-S/-E) for a just-finished job a second or two
    after `sacct -j` already shows it, so one cycle may miss it; the next cycle's window
    (mark - overlap) finds it. That lag is what the overlap is for.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = usage_ingest()
        seen = set(UsageRecord.objects.filter(slurm_job_id__in=job_ids).values_list("slurm_job_id", flat=True))
        if seen == set(job_ids):
            return result
        assert time.monotonic() < deadline, f"never ingested: {set(job_ids) - seen}"
        time.sleep(1)


class Tables(HTMLParser):
    """The cells of every <table id=...> on a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.current = None
        self.row = None
        self.cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "id" in attrs:
            self.current = self.tables.setdefault(attrs["id"], [])
        elif tag == "tr" and self.current is not None:
            self.row = []
        elif tag == "td" and self.row is not None and "colspan" not in attrs:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row:
            self.current.append(self.row)
            self.row = None
        elif tag == "table":
            self.current = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_a_known_mix_of_jobs_reconciles_with_sacct_and_only_the_outside_job_differs(client, train, people):
    student1, student2 = people["student1"], people["student2"]
    window_start = timezone.now().replace(microsecond=0) - timedelta(seconds=1)

    completed = submit(student1, train, gpus=2, sleep=3)
    failed = submit(student1, train, gpus=1, sleep=1, code=1)
    cancelled = submit(student2, train, gpus=1, sleep=60)
    outside_id = runner.run(
        [
            "sbatch",
            "--parsable",
            "--export=NONE",
            "--account=cs103",
            "--partition=gpu",
            "--gres=gpu:1",
            "--job-name=by-hand",
            "--no-requeue",
            "--output=/dev/null",
            "--time=2",
            "--wrap=sleep 2",
        ],
        run_as="student2",
    ).strip()

    cancelled = wait_for_status(cancelled, Status.RUNNING)
    # Reason for a fixed wait: the cancelled job must run for a measurable time, so that its
    # usage record has a non-zero elapsed time that the report has to sum.
    time.sleep(2)
    services.job_cancel(job=cancelled, actor=student2)
    job_scancel(job_id=cancelled.pk)
    assert wait_for_status(completed, Status.COMPLETED).exit_code == 0
    assert wait_for_status(failed, Status.FAILED).exit_code == 1
    assert wait_for_status(cancelled, Status.CANCELLED)
    wait_in_sacct(outside_id)
    window_end = timezone.now().replace(microsecond=0) + timedelta(seconds=2)
    # Reason for a fixed wait: the report's window ends 2 s from now (whole seconds, as the
    # form sends them); the ingest must run after that end so every record falls inside it.
    time.sleep(2)

    first = ingest_until_seen([job.slurm_job_id for job in (completed, failed, cancelled)] + [outside_id])
    # Other tests' jobs may still be running on the cluster (their rows rightly change); finished ones may not.
    finished = UsageRecord.objects.exclude(state__in=LIVE_STATES).order_by("pk")
    snapshot, rows = list(finished.values()), UsageRecord.objects.count()
    again = usage_ingest()
    assert list(UsageRecord.objects.filter(pk__in=[row["id"] for row in snapshot]).order_by("pk").values()) == snapshot
    assert UsageRecord.objects.filter(pk__lte=max(row["id"] for row in snapshot)).count() <= rows
    assert UsageRecord.objects.filter(account="cs103", submitted_at__gte=window_start).count() == 4
    assert again.since < first.until

    window = ReportRange(window_start, window_end)
    report = course_report(course=train.course, window=window)

    from_sacct = sacct_gpu_seconds_by_user(window_start.astimezone(UTC), window_end.astimezone(UTC))
    assert {row.key: row.gpu_seconds for row in report.students if row.gpu_seconds} == from_sacct
    assert set(from_sacct) == {"student1", "student2"}
    assert report.total.gpu_seconds == sum(from_sacct.values())
    assert (report.total.jobs, report.total.completed, report.total.failed, report.total.cancelled) == (4, 2, 1, 1)
    assert dict(report.states) == {"COMPLETED": 2, "FAILED": 1, "CANCELLED": 1}
    by_assignment = {row.label: row for row in report.assignments}
    assert by_assignment["Train"].jobs == 3 and by_assignment["Outside the portal"].jobs == 1

    records = {record.slurm_job_id: record for record in UsageRecord.objects.filter(account="cs103")}
    for job in (completed, failed, cancelled):
        assert records[job.slurm_job_id].job_id == job.pk, "linked by the lq-<uuid> job name"
    assert records[outside_id].job_id is None

    rec = report.reconciliation
    assert [(d.kind, d.slurm_job_id, d.user) for d in rec.differences] == [("outside", outside_id, "student2")]
    assert rec.portal.jobs == 3 and rec.slurm.jobs == 4
    outside = records[outside_id]
    assert rec.slurm.gpu_seconds - rec.portal.gpu_seconds == outside.gpus * outside.elapsed_seconds

    client.force_login(people["instructor1"])
    day = timezone.localdate(window_start)
    query = f"?first={day}&last={timezone.localdate(window_end)}"
    page = client.get(reverse("reports:course-report", args=["gpu-lab"]) + query)
    exported = client.get(reverse("reports:course-report-csv", args=["gpu-lab"]) + query)
    assert page.status_code == exported.status_code == 200
    tables = Tables()
    tables.feed(page.content.decode())
    rows = list(csv.reader(io.StringIO(exported.content.decode())))
    assert rows[0] == ["Section", *Usage.HEADER]
    assert [row[1:] for row in rows if row[0] == "total"] == tables.tables["usage-total"]
    assert [row[1:] for row in rows if row[0] == "student"] == tables.tables["usage-students"]
    assert [row[1:] for row in rows if row[0] == "assignment"] == tables.tables["usage-assignments"]
    assert outside_id in page.content.decode()
