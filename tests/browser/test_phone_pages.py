"""At 390 px wide (a phone) every page each persona sees fits the screen, with no sideways scrolling of the page,
and axe-core finds no critical or serious accessibility violation on them, at phone or laptop width. The jobs have
a long script and real files (the file list, the file viewer) and the course a lab session (the labs table)."""

import subprocess
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from lti_tool.models import Key

from courses.models import LabSession
from jobs.models import Status
from tests.browser.conftest import PHONE, axe_violations
from tests.conftest import job_row, make_user

pytestmark = pytest.mark.timeout(300)

#: The first elements (outside tables, which scroll in their own box) that reach past the viewport's right edge.
TOO_WIDE = """() => [...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth && !e.closest("table"))
  .slice(0, 8).map((e) => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className}`)"""


def pages_of(persona: str, job) -> list[str]:
    return {
        "student": [
            "/",
            "/jobs/",
            "/courses/cs101/",
            "/courses/cs101/assignments/hello/",
            f"/jobs/{job.uuid}/",
            f"/jobs/{job.retry_of.uuid}/",
            f"/jobs/{job.uuid}/resubmit/",
            f"/jobs/{job.uuid}/view/results/metrics.csv",
            f"/jobs/{job.uuid}/view/results/log.txt",
            f"/jobs/{job.uuid}/log/out/",
            f"/jobs/{job.retry_of.uuid}/retry/",
            "/jobs/help/retries/",
            "/jobs/notifications/",
            "/api/tokens/",
            "/reports/course/cs101/mine/",
        ],
        "ta": [
            "/",
            "/courses/cs101/",
            "/jobs/course/cs101/",
            "/jobs/course/cs101/failed/",
            "/jobs/course/cs101/gradebook/",
            "/jobs/course/cs101/gradebook/hello/",
            f"/jobs/{job.uuid}/",
            f"/jobs/{job.retry_of.uuid}/",
            "/jobs/",
            "/reports/course/cs101/",
            "/jobs/notifications/",
            "/jobs/help/retries/",
            f"/jobs/{job.uuid}/view/results/log.txt",
        ],
        "instructor": [
            "/",
            "/courses/cs101/",
            "/courses/cs101/policy/",
            "/courses/cs101/labs/",
            "/courses/cs101/roster/",
            "/courses/cs101/hints/",
            "/courses/cs101/assignments/new/",
            "/courses/cs101/assignments/hello/edit/",
            "/courses/cs101/assignments/import/",
            "/courses/cs101/copy/",
            "/jobs/course/cs101/gradebook/hello/",
            "/api/tokens/",
            "/jobs/course/cs101/failed/",
            "/jobs/course/cs101/",
            f"/jobs/{job.uuid}/",
            "/reports/course/cs101/",
            "/reports/course/cs101/statement/",
        ],
        "operator": [
            "/",
            "/reports/",
            "/cluster/associations/",
            "/courses/cs101/",
            "/courses/cs101/policy/",
            "/jobs/course/cs101/",
            "/jobs/course/cs101/failed/",
            f"/jobs/{job.uuid}/",
            "/reports/course/cs101/",
            "/reports/course/cs101/statement/",
            "/courses/cs101/labs/",
            "/jobs/notifications/",
            "/lms/setup/",
        ],
    }[persona]


@pytest.fixture
def operator(db):
    """Operations staff, in no course; the LMS tool has its signing key (the LMS set-up page shows it)."""
    Key.objects.generate()
    return make_user("operator", is_staff=True)


#: A script longer than its box on the job page, so the box scrolls.
LONG_SCRIPT = "".join(f"echo 'step {n} of the training loop'\n" for n in range(80))


def as_student(command: str) -> None:
    """Run a shell command as the student's account (files owned by the student, the job root's group)."""
    made = subprocess.run(["runuser", "-u", "student1", "--", "sh", "-c", command], capture_output=True)
    assert made.returncode == 0, made.stderr


def finished_jobs(student, assignment, job_root):
    """A failed first attempt with an explanation and its completed retry, as the sync leaves them; the retry's
    folder holds a log and a table of results, and the course had a lab session."""
    now = timezone.now()
    timing = {"submitted_at": now, "started_at": now, "ended_at": now, "elapsed_seconds": 754, "script": LONG_SCRIPT}
    first = job_row(
        student, assignment, status=Status.FAILED, slurm_job_id="881", explanation_key="cuda-out-of-memory", **timing
    )
    workdir = job_root / "student1" / str(uuid.uuid4())
    retry = job_row(
        student,
        assignment,
        status=Status.COMPLETED,
        slurm_job_id="882",
        attempt=2,
        retry_of=first,
        workdir=str(workdir),
        **timing,
    )
    as_student(f"mkdir -p {workdir}/results")
    as_student(f"seq 1 400 | sed 's/^/line /' > {workdir}/results/log.txt")
    as_student(f"printf 'epoch,loss\\n1,0.92\\n2,0.57\\n' > {workdir}/results/metrics.csv")
    as_student(f"seq 1 400 > {workdir}/job.out")
    LabSession.objects.create(  # an ended lab: its row offers nothing to focus
        course=assignment.course,
        starts_at=now - timedelta(days=2),
        ends_at=now - timedelta(days=2, hours=-2),
        gpus=2,
        state=LabSession.State.ENDED,
        reservation_name="lq-lab-cs101-20261201-1400",
        reserved_nodes="gpu1,gpu2",
    )
    return retry


@pytest.mark.parametrize("persona", ["student", "ta", "instructor", "operator"])
def test_every_main_page_fits_a_phone_and_has_no_serious_accessibility_violation(
    persona, request, page_for, student, ta, instructor, assignment, job_root
):
    job = finished_jobs(student, assignment, job_root)
    job_row(student, assignment, status=Status.RUNNING, slurm_job_id="883", attempt=3)  # on the home page
    assignment.course.gpu_hours_per_student = 10  # the home page's budget meter
    assignment.course.save(update_fields=["gpu_hours_per_student"])
    page = page_for(request.getfixturevalue(persona), viewport=PHONE)
    problems = []
    for url in pages_of(persona, job):
        response = page.goto(url)
        assert response.status == 200, url
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            problems.append(f"{url} is {width} px wide; too wide: {page.evaluate(TOO_WIDE)}")
        problems += [f"{url}: {violation}" for violation in axe_violations(page)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("persona", ["student", "ta", "instructor", "operator"])
def test_the_same_pages_on_a_laptop_have_no_serious_accessibility_violation(
    persona, request, page_for, student, ta, instructor, assignment, job_root
):
    job = finished_jobs(student, assignment, job_root)
    page = page_for(request.getfixturevalue(persona))
    problems = []
    for url in pages_of(persona, job):
        assert page.goto(url).status == 200, url
        problems += [f"{url}: {violation}" for violation in axe_violations(page)]
    assert not problems, "\n".join(problems)
