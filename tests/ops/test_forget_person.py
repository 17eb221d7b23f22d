"""`manage.py forget_person NETID` on a student whose job really ran on the lab cluster, run as the service
account (the totals test runs it in this process, where coverage measures it): their files and personal
data go, their jobs and usage stay under a pseudonym, and the course report (totals, per-student rows, the
reconciliation with Slurm's accounting) adds up exactly as before, also after the next usage ingest copies
their job's accounting record again.
"""

import csv
import io
import os
from datetime import timedelta
from pathlib import Path

import pytest
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs.models import Job, JobNote, Status
from jobs.services import job_note_add
from jobs.staging import staging_dir
from jobs.uploads import SESSION_KEY
from reports.course_report import course_report
from reports.ingest import usage_ingest
from reports.models import UsageRecord
from reports.pseudonyms import pseudonym
from reports.queries import ReportRange
from tests.behaviour_helpers import job_that_ran
from tests.conftest import job_row, submit_form
from tests.service_account import manage_as_service_account, manage_in_process, service_media  # noqa: F401

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]


def forget(settings, *args: str):
    return manage_as_service_account(settings, "forget_person", *args)


def usage_csv(client, instructor) -> list[list[str]]:
    client.force_login(instructor)
    response = client.get(reverse("reports:course-report-csv", args=["cs101"]))
    assert response.status_code == 200
    return list(csv.reader(io.StringIO(response.content.decode())))


def report_over(course, job: Job) -> dict:
    """The course report over the job's run, seen from just after it (a fixed moment: jobs of other test runs
    still running on the course account would otherwise count up to a moving "now")."""
    second = timedelta(seconds=1)
    window = ReportRange(job.submitted_at - second, job.ended_at + second)
    report = course_report(course=course, window=window, now=job.ended_at + second)
    found = report.reconciliation
    return {
        "total": report.total.cells,
        "students": {row.key: row.cells[2:] for row in report.students},
        "assignments": [row.cells for row in report.assignments],
        "sides": (found.portal, found.slurm),
        "differences": sorted((d.kind, d.slurm_job_id, d.user) for d in found.differences),
    }


def test_forgetting_a_student_keeps_the_course_totals_and_the_reconciliation_as_they_were(
    client, student, instructor, assignment, course, settings
):
    job = job_that_ran(client, student)
    name = pseudonym("student1")
    before = report_over(course, job)
    assert "student1" in before["students"] and before["sides"][0].jobs >= 1

    done = manage_in_process("forget_person", "student1")  # in this process: what coverage measures

    assert done.returncode == 0, done.stderr
    assert f"student1 is now {name}" in done.stdout
    after = report_over(course, job)
    assert after["total"] == before["total"], "the course total is unchanged"
    assert after["students"][name] == before["students"]["student1"], "their usage, under the pseudonym"
    assert "student1" not in after["students"]
    assert after["assignments"] == before["assignments"]
    assert after["sides"] == before["sides"], "the reconciliation's portal and Slurm sides are unchanged"
    assert after["differences"] == [
        (kind, job_id, name if user == "student1" else user) for kind, job_id, user in before["differences"]
    ]
    exported = usage_csv(client, instructor)
    assert name in {row[2] for row in exported}
    assert not any("student1" in cell.lower() for row in exported for cell in row), "nowhere in the export"
    record = UsageRecord.objects.get(job=job)
    assert record.user == name

    usage_ingest()  # the next cycle copies the job's accounting record again (it is inside the overlap)

    record.refresh_from_db()
    assert (record.user, record.job_id) == (name, job.pk), "filed under the pseudonym, linked to its job"
    assert not UsageRecord.objects.filter(slurm_job_id=job.slurm_job_id, user="student1").exists()


def test_forgetting_removes_their_files_and_personal_data_and_keeps_their_jobs_under_the_pseudonym(
    client, student, ta, assignment, settings
):
    job = job_that_ran(client, student, uploads={"essay.txt": b"my own words\n"})
    student.email, student.last_name = "student1@example.edu", "Doe"
    student.save()
    SocialAccount.objects.create(user=student, provider="oidc-campus", uid="student1@example.edu")
    EmailAddress.objects.create(user=student, email="student1@example.edu", verified=True, primary=True)
    job_note_add(job=job, author=ta, text="Student1 Doe should check the learning rate.")
    signed_in = client.__class__()
    signed_in.force_login(student)
    name = pseudonym("student1")

    dry = forget(settings, "student1", "--dry-run")

    assert dry.returncode == 0, dry.stderr
    assert f"would remove: files of job {job.uuid}" in dry.stdout and f"would become {name}" in dry.stdout
    assert Path(job.workdir, "job.sh").is_file() and get_user_model().objects.filter(netid="student1").exists()

    done = forget(settings, "student1")

    assert done.returncode == 0, done.stderr
    assert not Path(job.workdir).exists() and not staging_dir(str(job.uuid)).exists()
    person = get_user_model().objects.get(pk=student.pk)
    assert (person.username, person.netid, person.email) == (name, name, "")
    assert (person.first_name, person.last_name) == ("", "")
    assert not person.is_active and not person.has_usable_password()
    assert not SocialAccount.objects.filter(user=person).exists()
    assert not EmailAddress.objects.filter(user=person).exists()
    assert not person.enrollments.exists()
    assert signed_in.get(reverse("jobs:job-list")).status_code == 302, "their session was ended"
    job.refresh_from_db()
    assert (job.run_as, job.script, job.parameters, job.status) == (name, "", {}, Status.COMPLETED)
    assert job.files_purged_at is not None and "student1" not in job.workdir
    assert not JobNote.objects.filter(job=job).exists()
    client.force_login(ta)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert name in page and "were removed on" in page
    assert "student1" not in page and "Student1" not in page and "Doe" not in page

    again = forget(settings, "student1")
    assert again.returncode != 0 and "No person in the portal has the cluster username 'student1'" in again.stderr


def test_forgetting_a_person_removes_the_files_their_sessions_kept_from_refused_forms_and_no_one_elses(
    client, student, classmate, assignment, settings
):
    kept = {}
    for person in (student, classmate):
        browser = client.__class__()
        browser.force_login(person)
        form = {**submit_form(param_EPOCHS="99"), "uploads": [SimpleUploadedFile("draft.txt", b"half done\n")]}
        refused = browser.post(reverse("jobs:job-create", args=["cs101", "hello"]), form)
        assert refused.status_code == 400
        kept[person.netid] = Path(settings.MEDIA_ROOT, "pending", refused.context["upload_token"], "draft.txt")
        assert kept[person.netid].is_file()
    # Names no token can have, as a damaged session might hold: none may reach past the person's own folders;
    # and a token whose folder is already gone (say, media restored from a backup) stops nothing.
    session = browser.session
    session[SESSION_KEY] = [*session[SESSION_KEY], "", ".", "..", "../elsewhere", "f0rg0tten-f0lder"]
    session.save()
    elsewhere = Path(settings.MEDIA_ROOT, "elsewhere", "keep.txt")
    elsewhere.parent.mkdir()
    elsewhere.write_text("not a kept upload\n")

    done = manage_in_process("forget_person", "student2")

    assert done.returncode == 0, done.stderr
    assert not kept["student2"].parent.exists()
    assert kept["student1"].read_bytes() == b"half done\n"
    assert elsewhere.read_text() == "not a kept upload\n"


def test_a_person_with_a_job_not_finished_is_refused_with_what_to_do(student, assignment, settings):
    job = job_row(student, assignment, status=Status.PENDING, slurm_job_id="1")

    done = forget(settings, "student1")

    assert done.returncode != 0
    assert f"student1 has 1 job(s) that have not finished: {job.uuid} (waiting in the cluster queue)" in done.stderr
    assert "Cancel them first" in done.stderr
    assert get_user_model().objects.get(pk=student.pk).netid == "student1", "nothing was changed"


def test_when_a_jobs_files_cannot_be_removed_the_person_is_not_forgotten_yet(client, student, assignment, settings):
    job = job_that_ran(client, student)
    os.chown(job.workdir, 0, 0)  # not the student's any more: the helper, as the student, must refuse it

    done = forget(settings, "student1")

    assert done.returncode != 0
    assert f"could not remove the files of job {job.uuid}" in done.stderr
    assert "belongs to another account" in done.stderr
    assert "nothing else was changed and student1 is not forgotten yet" in done.stderr
    person = get_user_model().objects.get(pk=student.pk)
    assert (person.netid, person.first_name, person.is_active) == ("student1", "Student1", True)
    assert UsageRecord.objects.get(job=job).user == "student1"
