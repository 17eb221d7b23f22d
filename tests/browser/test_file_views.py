"""A job's PNG and CSV viewed in the real portal (gunicorn as the service account, reading a job directory
the student owns) on a phone: the image decodes, the table shows and scrolls in its own box, the page is
no wider than the screen, and axe-core finds no critical or serious violation."""

import subprocess
import uuid

import pytest
from django.utils import timezone

from jobs.models import Status
from tests.browser.conftest import PHONE, axe_violations
from tests.browser.test_phone_pages import TOO_WIDE
from tests.conftest import job_row
from tests.jobs.test_file_views import png

pytestmark = pytest.mark.timeout(300)


def as_student(command: str, data: bytes = b"") -> None:
    """Run a shell command as the student's account (files owned by the student, the job root's group)."""
    made = subprocess.run(["runuser", "-u", "student1", "--", "sh", "-c", command], input=data, capture_output=True)
    assert made.returncode == 0, made.stderr


@pytest.fixture
def job(student, assignment, job_root):
    job = job_row(
        student,
        assignment,
        status=Status.COMPLETED,
        workdir=str(job_root / "student1" / str(uuid.uuid4())),
        submitted_at=timezone.now(),
    )
    as_student(f"mkdir -p {job.workdir}/plots {job.workdir}/results")
    as_student(f"cat > {job.workdir}/plots/loss.png", png(120, 80))
    header = ",".join(f"metric_with_a_long_name_{c}" for c in range(60))
    rows = [",".join(f"{r * c / 7:.6f}" for c in range(60)) for r in range(300)]
    as_student(f"cat > {job.workdir}/results/metrics.csv", "\n".join([header, *rows]).encode())
    return job


def test_a_png_and_a_wide_csv_view_on_a_phone(page_for, student, job):
    page = page_for(student, viewport=PHONE)

    assert page.goto(f"/jobs/{job.uuid}/view/plots/loss.png").status == 200
    page.wait_for_function("document.querySelector('#file-image').complete")
    assert page.eval_on_selector("#file-image", "img => img.naturalWidth") == 120
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.evaluate(TOO_WIDE)
    assert axe_violations(page) == []

    assert page.goto(f"/jobs/{job.uuid}/").status == 200
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.evaluate(TOO_WIDE)
    page.locator("tr", has_text="results/metrics.csv").get_by_role("link", name="View").click()
    page.wait_for_url(f"**/jobs/{job.uuid}/view/results/metrics.csv")
    table = page.locator("#csv-table")
    assert table.is_visible()
    assert table.locator("tbody tr").count() == 200
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.evaluate(TOO_WIDE)
    box = page.locator(".file-table").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    assert page.eval_on_selector(".file-table", "e => e.scrollWidth > e.clientWidth"), "the table scrolls in its box"
    assert axe_violations(page) == []
