"""`manage.py purge_job_files` on jobs that really ran on the lab cluster, run as the service account.

The command runs as `labqueue`, which owns nothing in the job root: it can only remove a job directory
through the job-directory helper run as the student. The job records and the usage records stay, the page
says the files were removed, a job still running or finished recently is left alone, and a symlink the
student planted inside the job directory is removed without its target being touched.
"""

import os
import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment
from jobs.models import Job, Status
from jobs.staging import staging_dir
from reports.models import UsageRecord
from tests.behaviour_helpers import job_that_ran
from tests.conftest import dispatch, submit_form, wait_for_status
from tests.helper_install import jobdir_helper_install
from tests.service_account import as_service_account, manage_as_service_account, manage_in_process, service_media  # noqa: F401

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]


def purge(settings, *args: str) -> subprocess.CompletedProcess:
    """`manage.py purge_job_files ARGS` as the service account, as an operator or the worker would run it."""
    return manage_as_service_account(settings, "purge_job_files", *args)


def as_student(*argv: str) -> None:
    done = subprocess.run(["runuser", "-u", "student1", "--", *argv], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_a_dry_run_lists_the_old_job_and_its_totals_and_removes_nothing(client, student, assignment, settings):
    job = job_that_ran(client, student, uploads={"data.csv": b"1,2\n"}, days_ago=10)
    bare = job_that_ran(client, student, days_ago=9)  # no uploads: no staging folder at all
    before = sorted(path.name for path in Path(job.workdir).iterdir())

    done = manage_in_process("purge_job_files", "--older-than", "7", "--dry-run")  # where coverage measures it

    assert done.returncode == 0, done.stderr
    assert f"would remove: job {job.uuid} of student1 (cs101/hello, completed" in done.stdout
    assert "uploads 1 file(s), 4\xa0bytes" in done.stdout
    [bare_line] = [line for line in done.stdout.splitlines() if str(bare.uuid) in line]
    assert "uploads 0 file(s), 0\xa0bytes" in bare_line
    assert "Total (dry run, nothing removed): 2 job(s) finished more than 7 day(s) ago" in done.stdout
    assert sorted(path.name for path in Path(job.workdir).iterdir()) == before
    assert (staging_dir(str(job.uuid)) / "data.csv").read_bytes() == b"1,2\n"
    job.refresh_from_db()
    assert job.files_purged_at is None


def test_purge_removes_an_old_jobs_directory_and_uploads_and_keeps_its_records_and_other_jobs(
    client, student, assignment, settings, course
):
    old = job_that_ran(client, student, uploads={"data.csv": b"1,2\n"}, days_ago=10)
    recent = job_that_ran(client, student)
    slow = Assignment.objects.create(
        course=course, slug="slow", title="Slow", script_template="sleep 300\n", gpus=0, cpus=1, mem_mb=100, minutes=10
    )
    assert client.post(reverse("jobs:job-create", args=["cs101", "slow"]), submit_form(gpus="0")).status_code == 302
    running = wait_for_status(dispatch(Job.objects.get(assignment=slow)), Status.RUNNING)
    long_ago = timezone.now() - timedelta(days=30)
    Job.objects.filter(pk=running.pk).update(created_at=long_ago, submitted_at=long_ago, started_at=long_ago)
    usage = UsageRecord.objects.get(job=old)

    done = manage_in_process("purge_job_files", "--older-than", "7")  # the removal still runs as the student

    assert done.returncode == 0, done.stderr
    assert f"removed: job {old.uuid} of student1" in done.stdout
    [line] = [line for line in done.stdout.splitlines() if line.startswith(f"removed: job {old.uuid}")]
    removed_files = int(re.search(rf"{re.escape(old.workdir)}\S* (\d+) file\(s\)", line)[1])
    assert removed_files >= 3, f"the helper's count of what it removed (script, output, upload): {line}"
    assert "Total (removed): 1 job(s) finished more than 7 day(s) ago" in done.stdout
    assert not Path(old.workdir).exists(), "the old job's directory is gone"
    assert not staging_dir(str(old.uuid)).exists(), "its staged uploads are gone"
    assert Path(old.workdir).parent.is_dir(), "the student's own directory stays"
    old.refresh_from_db()
    assert old.status == Status.COMPLETED and old.files_purged_at is not None
    assert old.events.filter(cause__startswith="The job's files (its output, logs and uploads) were removed").exists()
    assert UsageRecord.objects.get(pk=usage.pk).job == old, "the usage record stays, linked to its job"
    assert (Path(recent.workdir) / "job.out").is_file(), "a job that ended recently keeps its files"
    assert (Path(running.workdir) / "job.sh").is_file(), "a running job keeps its files, however old"
    assert Job.objects.filter(pk__in=[recent.pk, running.pk], files_purged_at__isnull=True).count() == 2

    again = purge(settings, "--older-than", "7")
    assert again.returncode == 0, again.stderr
    assert "Total (removed): 0 job(s)" in again.stdout


def test_a_symlink_the_student_planted_in_the_job_directory_is_removed_and_its_target_left_alone(
    client, student, assignment, settings, job_root
):
    job = job_that_ran(client, student, days_ago=10)
    keep = job_root / "student1" / "keep"
    as_student("/usr/bin/mkdir", str(keep))
    as_student("/usr/bin/python3", "-c", f"open({str(keep / 'precious.txt')!r}, 'w').write('mine')")
    as_student("/usr/bin/ln", "-s", str(keep), str(Path(job.workdir) / "results" / "to-keep"))
    as_student("/usr/bin/ln", "-s", str(keep / "precious.txt"), str(Path(job.workdir) / "precious-link"))

    done = purge(settings, "--older-than", "7")

    assert done.returncode == 0, done.stderr
    assert not Path(job.workdir).exists()
    assert (keep / "precious.txt").read_text() == "mine", "the link's target was not followed"


def test_the_job_page_says_the_files_were_removed_under_the_retention_policy(client, student, assignment, settings, ta):
    job = job_that_ran(client, student, days_ago=10)
    done = purge(settings, "--older-than", "7")
    assert done.returncode == 0, done.stderr

    for viewer in (student, ta):
        client.force_login(viewer)
        page = client.get(reverse("jobs:job-detail", args=[job.uuid]))
        text = page.content.decode()
        assert page.status_code == 200
        assert "were removed on" in text and "under the portal's retention policy" in text
        assert "(nothing yet)" not in text and "cannot read" not in text
    log = client.get(reverse("jobs:job-log", args=[job.uuid, "out"]))
    assert log.status_code == 200 and "were removed on" in log.content.decode()
    archive = client.get(reverse("jobs:job-zip", args=[job.uuid]))
    assert archive.status_code == 302 and archive["Location"] == reverse("jobs:job-detail", args=[job.uuid])


def test_without_a_retention_period_the_command_says_what_to_give_it(settings):
    done = purge(settings)

    assert done.returncode != 0
    assert "LABQUEUE_RETAIN_JOB_FILES_DAYS is not set" in done.stderr and "--older-than DAYS" in done.stderr


def test_the_hourly_task_applies_the_retention_setting_with_the_same_function(client, student, assignment, settings):
    old = job_that_ran(client, student, days_ago=10)
    recent = job_that_ran(client, student, days_ago=3)
    jobdir_helper_install()

    task = "from jobs.tasks import job_files_purge\njob_files_purge.apply()\n"
    done = as_service_account(task, settings, LABQUEUE_RETAIN_JOB_FILES_DAYS="7")

    assert done.returncode == 0, done.stderr
    assert not Path(old.workdir).exists() and Path(recent.workdir).is_dir()
    old.refresh_from_db()
    assert old.files_purged_at is not None


def test_beat_runs_the_purge_every_hour_only_when_a_retention_period_is_set(settings):
    code = "from django.conf import settings\nprint(settings.CELERY_BEAT_SCHEDULE.get('job-files-purge'))\n"

    assert (
        "'task': 'jobs.tasks.job_files_purge', 'schedule': 3600.0"
        in as_service_account(code, settings, LABQUEUE_RETAIN_JOB_FILES_DAYS="30").stdout
    )
    assert as_service_account(code, settings).stdout.strip() == "None"


def test_a_job_whose_files_cannot_be_removed_is_named_left_as_it_was_and_does_not_stop_the_others(
    client, student, assignment, settings
):
    stuck = job_that_ran(client, student, days_ago=20)
    other = job_that_ran(client, student, days_ago=10)
    os.chown(stuck.workdir, 0, 0)  # not the student's any more: the helper, as the student, must refuse it

    done = manage_in_process("purge_job_files", "--older-than", "7")  # the helper still runs as the student

    assert done.returncode != 0
    assert f"could not remove: job {stuck.uuid}" in done.stderr and "belongs to another account" in done.stderr
    assert "they are left as they were and the next run tries again" in done.stderr
    assert (Path(stuck.workdir) / "job.out").is_file()
    assert not Path(other.workdir).exists(), "the next job was still removed"
    stuck.refresh_from_db()
    assert stuck.files_purged_at is None


def test_a_removal_that_does_not_answer_in_time_and_a_record_naming_more_than_one_job_directory_are_left_and_named(
    client, student, assignment, settings
):
    slow = job_that_ran(client, student, days_ago=20)
    misplaced = job_that_ran(client, student, days_ago=20)
    everything = Path(misplaced.workdir).parent  # a record naming the student's whole tree, not one job's
    Job.objects.filter(pk=misplaced.pk).update(workdir=str(everything))
    unusable = job_that_ran(client, student, days_ago=20)  # a record whose account no run-as prefix may take
    odd_tree = Path(unusable.workdir).parent.parent / "-student1" / str(unusable.uuid)
    odd_tree.mkdir(parents=True)
    Job.objects.filter(pk=unusable.pk).update(workdir=str(odd_tree), run_as="-student1")
    settings.LABQUEUE_JOBDIR_TIMEOUT = 0.001  # the file system does not answer in time

    try:
        done = manage_in_process("purge_job_files", "--older-than", "7")  # in this process, where mutants are seen
    finally:
        shutil.rmtree(odd_tree.parent)

    assert done.returncode != 0
    assert f"could not remove: job {slow.uuid}" in done.stderr
    assert "the job directory could not be removed: " in done.stderr and "did not answer within" in done.stderr
    assert f"{everything} is not a job directory of 'student1'; the portal removes only those." in done.stderr
    assert f"could not remove: job {unusable.uuid}" in done.stderr
    assert "not a valid cluster username: '-student1'" in done.stderr
    assert (Path(slow.workdir) / "job.out").is_file() and (Path(misplaced.workdir) / "job.out").is_file()
    assert Job.objects.filter(pk__in=[slow.pk, misplaced.pk], files_purged_at__isnull=True).count() == 2
