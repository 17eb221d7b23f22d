"""Edit and resubmit in the browser, on a phone (390 px): from a failed job's page the student opens the form,
changes one parameter, submits and lands on the new attempt's page. The form fits the screen and axe-core
finds no critical or serious accessibility violation on it."""

import os
import pwd

import pytest
from django.utils import timezone

from jobs.models import Job, Status
from jobs.staging import staging_dir
from tests.browser.conftest import PHONE, axe_violations
from tests.browser.test_phone_pages import TOO_WIDE
from tests.conftest import job_row
from tests.service_account import SERVICE_ACCOUNT

pytestmark = pytest.mark.timeout(300)

NOTES = b"notes of the failed attempt 2b7e\n"


def staged_as_the_portal(job: Job, name: str, content: bytes) -> None:
    """A file uploaded with `job`, where the portal (the service account) keeps it."""
    account = pwd.getpwnam(SERVICE_ACCOUNT)
    folder = staging_dir(str(job.uuid))
    folder.mkdir(parents=True)
    (folder / name).write_bytes(content)
    for path in (folder.parent, folder, folder / name):
        os.chown(path, account.pw_uid, account.pw_gid)


def test_a_student_edits_one_parameter_of_a_failed_job_and_resubmits_it_from_a_phone(page_for, student, assignment):
    now = timezone.now()
    failed = job_row(
        student,
        assignment,
        status=Status.FAILED,
        slurm_job_id="991",
        explanation_key="cuda-out-of-memory",
        parameters={"EPOCHS": 2, "RATE": 0.5, "SIZE": "large", "NAME": "bs64"},
        submitted_at=now,
        ended_at=now,
    )
    staged_as_the_portal(failed, "notes.txt", NOTES)
    page = page_for(student, viewport=PHONE)
    page.goto(f"/jobs/{failed.uuid}/")
    page.get_by_role("link", name="Edit and resubmit…").click()
    page.wait_for_url(f"**/jobs/{failed.uuid}/resubmit/")

    assert page.get_by_label("NAME").input_value() == "bs64"
    assert page.get_by_label("SIZE").input_value() == "large"
    assert page.get_by_label("kept from attempt 1: notes.txt").is_checked()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the form is {width} px wide: {page.evaluate(TOO_WIDE)}"
    assert axe_violations(page) == []

    page.get_by_label("NAME").fill("bs16")
    page.get_by_role("button", name="Submit as a new attempt").click()
    new = Job.objects.get(resubmit_of=failed)
    page.wait_for_url(f"**/jobs/{new.uuid}/")
    page.get_by_text("Attempt 2 submitted.").wait_for()
    assert page.locator("dl.facts dd code", has_text="bs16").count() == 1
    assert page.locator("#resubmit").get_by_role("link", name="attempt 1").is_visible()
    assert new.parameters == {**failed.parameters, "NAME": "bs16"}
    assert (staging_dir(str(new.uuid)) / "notes.txt").read_bytes() == NOTES
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
