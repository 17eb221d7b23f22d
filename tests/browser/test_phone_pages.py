"""At 390 px wide (a phone) the ten main pages of each persona fit the screen, with no sideways scrolling of
the page, and axe-core finds no critical or serious accessibility violation on them, at phone or laptop width."""

import pytest
from django.utils import timezone

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
            "/jobs/help/retries/",
            "/jobs/notifications/",
            "/reports/course/cs101/mine/",
        ],
        "ta": [
            "/",
            "/courses/cs101/",
            "/jobs/course/cs101/",
            "/jobs/course/cs101/failed/",
            f"/jobs/{job.uuid}/",
            f"/jobs/{job.retry_of.uuid}/",
            "/jobs/",
            "/reports/course/cs101/",
            "/jobs/notifications/",
            "/jobs/help/retries/",
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
            "/jobs/course/cs101/failed/",
            "/reports/course/cs101/",
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
            "/jobs/notifications/",
        ],
    }[persona]


@pytest.fixture
def operator(db):
    """Operations staff, in no course."""
    return make_user("operator", is_staff=True)


def finished_jobs(student, assignment):
    """A failed first attempt with an explanation and its completed retry, as the sync leaves them."""
    now = timezone.now()
    timing = {"submitted_at": now, "started_at": now, "ended_at": now, "elapsed_seconds": 754}
    first = job_row(
        student, assignment, status=Status.FAILED, slurm_job_id="881", explanation_key="cuda-out-of-memory", **timing
    )
    return job_row(
        student, assignment, status=Status.COMPLETED, slurm_job_id="882", attempt=2, retry_of=first, **timing
    )


@pytest.mark.parametrize("persona", ["student", "ta", "instructor", "operator"])
def test_every_main_page_fits_a_phone_and_has_no_serious_accessibility_violation(
    persona, request, page_for, student, ta, instructor, assignment
):
    job = finished_jobs(student, assignment)
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
    persona, request, page_for, student, ta, instructor, assignment
):
    job = finished_jobs(student, assignment)
    page = page_for(request.getfixturevalue(persona))
    problems = []
    for url in pages_of(persona, job):
        assert page.goto(url).status == 200, url
        problems += [f"{url}: {violation}" for violation in axe_violations(page)]
    assert not problems, "\n".join(problems)
