"""The job page keeps still while its job moves on. A student opens the page of a job still waiting to be sent
to the cluster; the job then really runs on the lab cluster (a Celery worker and beat as the service account),
prints its output, writes files and completes, and the page swaps in each change. Chromium's layout-shift
entries (those without recent input, summed as Cumulative Layout Shift counts them) stay under 0.1, the
threshold of "good", at laptop and at phone width: the timing facts have their rows from the start and the
files appear below the output, so nothing already on the screen is pushed down."""

import pytest
from playwright.sync_api import expect

from courses.models import Assignment
from jobs.models import Job, Status
from tests.browser.conftest import PHONE
from tests.http_helpers import celery_queue_clear

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

#: Cumulative Layout Shift at or above this is "needs improvement" (web.dev/articles/cls).
GOOD_CLS = 0.1
#: How long the page may take to show a change made by the worker (a poll and a sync each second, Slurm's own
#: scheduling, on a shared two-core machine).
SHOWN_WITHIN_MS = 60_000
#: Prints a few lines while it runs (the page polls meanwhile), then writes two files and a last line.
SCRIPT = """\
echo "epoch 1 loss 0.92"
sleep 3
echo "epoch 2 loss 0.57"
sleep 3
mkdir -p results
printf 'epoch,loss\\n1,0.92\\n2,0.57\\n' > results/metrics.csv
echo "finished" > results/done.txt
echo "epoch 3 loss 0.31"
"""
#: Each layout shift Chromium reports without recent input: its value, the status the page showed, and the
#: elements that moved.
RECORD_SHIFTS = """
window.layoutShifts = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.hadRecentInput) continue;
    const status = document.querySelector("#job-announce .status");
    window.layoutShifts.push({
      value: entry.value,
      status: status ? status.className : "",
      moved: entry.sources.map((s) => s.node ? (s.node.id || s.node.nodeName) : "?"),
    });
  }
}).observe({type: "layout-shift", buffered: true});
"""


@pytest.fixture
def portal_env() -> dict[str, str]:
    """Polls and syncs every second; the slow periodic tasks out of the way."""
    return {
        "LABQUEUE_POLL_SECONDS": "1",
        "LABQUEUE_SYNC_SECONDS": "1",
        "LABQUEUE_LAB_TICK_SECONDS": "3600",
        "LABQUEUE_RECONCILE_SECONDS": "3600",
        "LABQUEUE_USAGE_INGEST_SECONDS": "3600",
    }


@pytest.fixture
def training(course) -> Assignment:
    return Assignment.objects.create(
        course=course,
        slug="train",
        title="Train a model",
        script_template=SCRIPT,
        gpus=0,
        cpus=1,
        mem_mb=200,
        minutes=2,
    )


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}, PHONE], ids=["laptop", "phone"])
def test_the_job_page_does_not_jump_from_queued_to_completed(portal, page_for, student, training, viewport):
    celery_queue_clear()
    sent = portal.submit(
        portal.browser_for(student), "cs101", "train", {"gpus": 0, "cpus": 1, "mem_mb": 200, "minutes": 2}
    )
    assert sent.status_code == 302, sent.text[:2000]
    job = Job.objects.get(user=student)
    assert job.status == Status.QUEUED  # no worker yet: the page opens on a job still waiting
    page = page_for(student, viewport=viewport)
    page.add_init_script(RECORD_SHIFTS)
    assert page.goto(f"/jobs/{job.uuid}/").status == 200
    expect(page.locator("#job-announce .status")).to_have_class("status status-queued")

    portal.start_worker()
    portal.start_beat()
    expect(page.locator("#job-announce .status")).to_have_class("status status-completed", timeout=SHOWN_WITHIN_MS)
    expect(page.get_by_role("link", name="View results/metrics.csv")).to_be_visible()
    expect(page.locator("#live-stdout")).to_contain_text("epoch 3 loss 0.31")
    # Layout shifts are reported after the frame that made them: two frames on, all of them are in.
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")

    shifts = page.evaluate("() => window.layoutShifts")
    statuses = {shift["status"] for shift in shifts}
    total = sum(shift["value"] for shift in shifts)
    print(f"layout shift at {viewport['width']} px: {total:.4f} over {len(shifts)} shifts {shifts}")
    assert total < GOOD_CLS, f"the page jumped: {total:.3f} in all ({statuses}): {shifts}"
