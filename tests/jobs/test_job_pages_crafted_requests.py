"""What a student sends to the job and report pages beyond what the pages offer: crafted input that must not be a
server error, limits a student must not get round (kept files, verification mail), and answers a shared proxy must
not keep. No cluster: job rows made directly, files
written under the test's own folder, refused submission forms (nothing is sent to Slurm)."""

import time
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jobs.models import Status
from tests.conftest import job_row, submit_form


def test_a_resubmit_link_with_a_superscript_digit_is_not_a_server_error(client, student, assignment):
    job = job_row(student, assignment, status=Status.FAILED)
    client.force_login(student)
    client.raise_request_exception = False

    response = client.get(reverse("jobs:job-resubmit", args=[job.uuid]), {"gpus": "\u00b2"})

    assert response.status_code == 200, "a resource that is not a whole number is left out, as the form says"


def test_a_usage_range_ending_on_the_last_day_a_date_can_hold_is_not_a_server_error(client, student, course):
    client.force_login(student)
    client.raise_request_exception = False

    response = client.get(
        reverse("reports:my-usage", args=[course.slug]), {"first": "9999-12-01", "last": "9999-12-31"}
    )

    assert response.status_code in (200, 400), "a range the portal cannot count is refused on the form"


def test_a_course_report_range_ending_on_the_last_day_a_date_can_hold_is_not_a_server_error(client, ta, course):
    client.force_login(ta)
    client.raise_request_exception = False

    response = client.get(
        reverse("reports:course-report", args=[course.slug]), {"first": "9999-12-01", "last": "9999-12-31"}
    )

    assert response.status_code in (200, 400)


def _refused_with(client, name: str, size: int, token: str = ""):
    url = reverse("jobs:job-create", args=["cs101", "hello"])
    form = {**submit_form(param_EPOCHS="99"), "uploads": [SimpleUploadedFile(name, b"x" * size)]}
    response = client.post(url, {**form, "upload_token": token} if token else form)
    assert response.status_code == 400
    return response.context["upload_token"]


def _bytes_under(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def test_files_kept_across_refused_forms_stay_within_what_one_submission_may_send(
    client, student, assignment, settings
):
    settings.LABQUEUE_UPLOAD_MAX_BYTES = 1000
    client.force_login(student)
    token = _refused_with(client, "try0.bin", 900)
    for n in range(1, 8):
        token = _refused_with(client, f"try{n}.bin", 900, token)

    kept = _bytes_under(Path(settings.MEDIA_ROOT) / "pending")

    assert kept <= 2 * settings.LABQUEUE_UPLOAD_MAX_BYTES, (
        f"{kept} bytes kept for one session though no submission may send more than 1000"
    )


def test_the_files_of_a_refused_form_the_session_no_longer_holds_are_not_left_on_disk(
    client, student, assignment, settings
):
    client.force_login(student)
    for n in range(15):
        _refused_with(client, f"try{n}.bin", 10)

    folders = list((Path(settings.MEDIA_ROOT) / "pending").iterdir())

    assert len(folders) <= 10, f"{len(folders)} folders kept, though the session can use only its last ten"


def test_a_verification_mail_a_minute_whatever_the_number_of_sessions(student, smtp_server):
    assert student.email == ""
    url = reverse("jobs:notification-settings")
    for _ in range(3):
        browser = Client()  # each a new sign-in of the same person (another browser, or signing in again)
        browser.force_login(student)
        browser.post(url, {"email": "victim@mail.example.org", "send_link": ""})

    time.sleep(1)
    mails = smtp_server.to("victim@mail.example.org")
    assert len(mails) == 1, "one person has the portal mail an address they typed once a minute at most"


def test_a_students_file_download_and_job_page_are_not_kept_by_a_shared_cache(client, student, assignment, tmp_path):
    workdir = tmp_path / "job"
    workdir.mkdir()
    (workdir / "marks.txt").write_text("student1: 71\n")
    job = job_row(student, assignment, status=Status.COMPLETED, workdir=str(workdir), submitted_at=timezone.now())
    client.force_login(student)

    download = client.get(reverse("jobs:job-file", args=[job.uuid, "marks.txt"]))
    page = client.get(reverse("jobs:job-detail", args=[job.uuid]))

    assert download.status_code == 200 and page.status_code == 200
    for response in (download, page):
        assert "private" in response.get("Cache-Control", "") or "no-store" in response.get("Cache-Control", "")
