"""A student's whole path in Chromium, on the real portal: gunicorn, a Celery worker and beat (all as the service
account, through Redis), the job really run on the lab cluster, the portal's mail to a real SMTP server.

The student asks for mail when a job finishes, opens the assignment and submits it by clicking; on the job page
they open History and keep keyboard focus on its summary while the page polls (at least three polls while the
job waits or runs) and the status moves on to Completed: focus stays, History stays open, the live region and
the tab's title say Completed, axe-core finds nothing critical or serious. Exactly one mail arrives, with the
job's link. They view the job's PNG (decoded) and CSV (a table) from the job page's View links, then edit and
resubmit with one parameter changed and land on the new attempt's page showing it."""

import base64
import re

import pytest
from playwright.sync_api import expect

from courses.models import Assignment
from jobs.models import Job, JobNotification, Status
from tests.browser.conftest import axe_violations
from tests.http_helpers import celery_queue_clear
from tests.jobs.test_file_views import png

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

SITE = "https://labqueue.cs.example.edu"
#: How long the page may take to show a change made by the worker (a poll each second, a sync every second,
#: Slurm's own scheduling, on a shared two-core machine).
SHOWN_WITHIN_MS = 60_000
PLOT = png(64, 48)
#: Waits a few seconds (so the page polls while the job runs), then writes a plot and a table of metrics.
SCRIPT = f"""\
echo "training $NAME for $EPOCHS epochs"
sleep 5
mkdir -p results
echo '{base64.b64encode(PLOT).decode()}' | base64 -d > results/loss.png
printf 'epoch,loss\\n1,0.92\\n2,0.57\\n3,0.31\\n' > results/metrics.csv
echo "done $NAME"
"""
PARAMETERS = [
    {"name": "EPOCHS", "type": "int", "default": 3, "min": 1, "max": 10},
    {"name": "NAME", "type": "string", "default": "baseline", "pattern": ".*"},
]
JOB_PAGE = re.compile(r"/jobs/[0-9a-f-]{36}/$")
#: Live statuses the page may show before the job ends (the worker may send it before the page first loads).
LIVE = ("Waiting to be sent to the cluster", "Being sent to the cluster", "Waiting in the cluster queue", "Running")


@pytest.fixture
def portal_env(settings, smtp_server) -> dict[str, str]:
    """Polls and syncs every second; mail to the test's SMTP server; the slow periodic tasks out of the way."""
    return {
        "LABQUEUE_POLL_SECONDS": "1",
        "LABQUEUE_SYNC_SECONDS": "1",
        "LABQUEUE_LAB_TICK_SECONDS": "3600",
        "LABQUEUE_RECONCILE_SECONDS": "3600",
        "LABQUEUE_USAGE_INGEST_SECONDS": "3600",
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": settings.EMAIL_HOST,
        "EMAIL_PORT": str(settings.EMAIL_PORT),
        "DEFAULT_FROM_EMAIL": settings.DEFAULT_FROM_EMAIL,
        "LABQUEUE_SITE_URL": SITE,
    }


@pytest.fixture
def training(course) -> Assignment:
    return Assignment.objects.create(
        course=course,
        slug="train",
        title="Train a model",
        script_template=SCRIPT,
        parameters=PARAMETERS,
        gpus=0,
        cpus=1,
        mem_mb=200,
        minutes=2,
    )


@pytest.fixture
def mailed_student(student):
    student.email = "student1@cs.example.edu"
    student.save(update_fields=["email"])
    return student


def test_a_student_submits_watches_is_mailed_views_results_and_resubmits(
    portal,
    page_for,
    mailed_student,
    training,
    smtp_server,
):
    celery_queue_clear()
    portal.start_worker()
    portal.start_beat()
    page = page_for(mailed_student)

    page.goto("/")
    page.get_by_role("link", name="Notifications").click()
    page.get_by_label("When one of my jobs finishes successfully").check()
    page.get_by_role("button", name="Save choices").click()
    expect(page.get_by_text("Your notification choices are saved.")).to_be_visible()

    page.goto("/courses/cs101/")
    page.get_by_role("link", name="Train a model").first.click()
    page.wait_for_url("**/courses/cs101/assignments/train/")
    polls: list[int] = []
    page.on("response", lambda response: polls.append(response.status) if "/status/" in response.url else None)
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url(JOB_PAGE)
    job = Job.objects.get(user=mailed_student)
    assert page.url.endswith(f"/jobs/{job.uuid}/")

    # Every status the live region shows, in order, as the page swaps it in; what it showed as each poll went.
    page.evaluate(
        """() => {
        const announce = document.querySelector('#job-announce');
        window.shownStatuses = [announce.textContent.trim()];
        new MutationObserver(() => window.shownStatuses.push(announce.textContent.trim()))
            .observe(announce, {subtree: true, childList: true, characterData: true});
        window.pollsSentWhile = [];
        document.addEventListener('htmx:beforeRequest', () => window.pollsSentWhile.push(
            document.querySelector('#job-announce .status').textContent.trim()));
    }"""
    )
    history = page.locator("details.history")
    page.locator("details.history > summary").click()
    expect(history).to_have_attribute("open", "")
    page.locator("details.history > summary").focus()
    page.evaluate("() => { window.focusedAtStart = document.activeElement; }")
    shown_first = page.locator("#job-announce .status").text_content()
    assert shown_first in LIVE, shown_first

    expect(page.locator("#job-announce")).to_have_text("Job status: Completed", timeout=SHOWN_WITHIN_MS)
    job.refresh_from_db()
    assert job.status == Status.COMPLETED, (job.status, job.message)
    shown = page.evaluate("() => window.shownStatuses")
    assert shown[-1] == "Job status: Completed", shown
    assert any(status in ("Job status: Waiting in the cluster queue", "Job status: Running") for status in shown), shown
    sent_while = page.evaluate("() => window.pollsSentWhile")
    in_slurm = [status for status in sent_while if status in ("Waiting in the cluster queue", "Running")]
    assert len(in_slurm) >= 3, f"polls sent while the page showed: {sent_while}"
    assert len(polls) >= len(sent_while), (polls, sent_while)
    assert set(polls) <= {200, 304}, polls
    assert page.evaluate("() => document.activeElement === window.focusedAtStart"), "focus moved"
    assert page.evaluate("() => document.activeElement.tagName") == "SUMMARY"
    expect(history).to_have_attribute("open", "")
    expect(page.locator("#job-announce")).to_have_attribute("aria-live", "polite")
    assert page.title().startswith("Completed · "), page.title()
    expect(page).to_have_title(re.compile(r"^Completed · Train a model · attempt 1 · LabQueue$"))
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    assert axe_violations(page) == []

    [mail] = smtp_server.wait_for(1)
    assert mail["To"] == "student1@cs.example.edu"
    assert mail["Subject"].strip() == "LabQueue: your job finished: Train a model · attempt 1"
    assert f"{SITE}/jobs/{job.uuid}/" in mail.get_body().get_content()

    page.get_by_role("link", name="View results/loss.png").click()
    page.wait_for_url(f"**/jobs/{job.uuid}/view/results/loss.png")
    page.wait_for_function("document.querySelector('#file-image').complete", timeout=10_000)
    assert page.eval_on_selector("#file-image", "img => img.naturalWidth") == 64
    page.go_back()
    page.get_by_role("link", name="View results/metrics.csv").click()
    page.wait_for_url(f"**/jobs/{job.uuid}/view/results/metrics.csv")
    rows = page.locator("#csv-table tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_be_visible()
    expect(rows.nth(1)).to_contain_text("0.57")
    page.go_back()

    page.get_by_role("link", name="Edit and resubmit…").click()
    page.wait_for_url(f"**/jobs/{job.uuid}/resubmit/")
    assert page.get_by_label("NAME").input_value() == "baseline"
    page.get_by_label("NAME").fill("wider")
    page.get_by_role("button", name="Submit as a new attempt").click()
    page.wait_for_url(JOB_PAGE)
    new = Job.objects.get(resubmit_of=job)
    assert page.url.endswith(f"/jobs/{new.uuid}/")
    page.get_by_text("Attempt 2 submitted.").wait_for()
    expect(page.locator("dl.facts dd code", has_text="wider")).to_have_count(1)
    assert new.parameters == {"EPOCHS": 3, "NAME": "wider"}

    # The new attempt runs too; once its mail has come, every task the worker was sent before it has run.
    expect(page.locator("#job-announce")).to_have_text("Job status: Completed", timeout=SHOWN_WITHIN_MS)
    smtp_server.wait_for(2)
    mailed_about = [re.search(r"/jobs/([0-9a-f-]{36})/", m.get_body().get_content())[1] for m in smtp_server.messages]
    assert sorted(mailed_about) == sorted([str(job.uuid), str(new.uuid)]), "one mail about each completed job"
    assert list(JobNotification.objects.filter(job=job).values_list("event", flat=True)) == ["finished"]
