"""A student watching a live job page in Chromium keeps their place while the job moves on: keyboard focus stays
on the Cancel button, an opened History stays open, a screen reader's live region and the tab's title say the
new status; polls of the unchanged job answer 304."""

import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Status
from jobs.services import job_transition
from tests.browser.conftest import axe_violations
from tests.conftest import job_row

pytestmark = pytest.mark.timeout(180)

#: How long the page may take to show a change (a poll each second, on a shared two-core machine).
SHOWN_WITHIN_MS = 20_000


@pytest.fixture
def portal_env() -> dict[str, str]:
    return {"LABQUEUE_POLL_SECONDS": "1"}


def test_a_status_change_seen_over_three_polls_keeps_focus_and_the_open_history(page_for, student, assignment):
    job = job_row(student, assignment)
    page = page_for(student)
    polls: list[int] = []
    page.on("response", lambda response: polls.append(response.status) if "/status/" in response.url else None)
    assert page.goto(f"/jobs/{job.uuid}/").status == 200
    expect(page).to_have_title("Waiting to be sent to the cluster · Hello GPU · attempt 1 · LabQueue")
    page.locator("details.history > summary").click()
    page.get_by_role("button", name="Cancel job").focus()
    page.evaluate("() => { window.focusedAtStart = document.activeElement; }")
    page.wait_for_event("response", lambda r: "/status/" in r.url and r.status == 304, timeout=SHOWN_WITHIN_MS)

    now = timezone.now()
    steps = [
        (Status.SUBMITTING, "Being sent to the cluster", {}),
        (Status.PENDING, "Waiting in the cluster queue", {"submitted_at": now, "slurm_job_id": "4242"}),
        (Status.RUNNING, "Running", {"slurm_state": "RUNNING", "started_at": now, "checked_at": now}),
    ]
    for status, label, fields in steps:
        answered = polls.count(200)
        assert job_transition(job=job, to=status, cause=f"Now {status}.", **fields)  # as the worker does
        expect(page.locator("#job-announce")).to_have_text(f"Job status: {label}", timeout=SHOWN_WITHIN_MS)
        assert polls.count(200) > answered, "a poll answered the change"

    assert page.evaluate("() => document.activeElement === window.focusedAtStart"), "focus moved"
    assert page.evaluate("() => document.activeElement.id") == "cancel-job"
    expect(page.locator("details.history")).to_have_attribute("open", "")
    expect(page.locator("details.history")).to_contain_text("Now running.")
    expect(page.locator("#job-announce")).to_have_attribute("aria-live", "polite")
    assert page.title().startswith("Running · ")
    expect(page).to_have_title(re.compile(r"^Running · Hello GPU · attempt 1 · LabQueue$"))
    assert polls.count(304) >= 1 and set(polls) <= {200, 304}, polls
    assert axe_violations(page) == []
