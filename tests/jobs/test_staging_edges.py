"""A job's staged uploads as operators meet them: where a submission keeps them (MEDIA_ROOT/uploads/<job uuid>/,
the place docs/records.md names), and what `manage.py purge_job_files` and `forget_person` count and remove for
jobs that never reached the cluster (refused before Slurm saw them, so they have no job directory and only their
staged uploads are left). A link found among the staged uploads is neither counted nor followed.

No cluster: the jobs are submitted through the page and their refusal recorded as the worker would.
"""

from datetime import timedelta
from pathlib import Path

from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from tests.conftest import submitted
from tests.service_account import manage_in_process

NOTES = b"my notes\n"
DATA = b"a,b\n1,2\n"


def documented_folder(settings, job: Job) -> Path:
    """Where docs/records.md tells operators a job's staged uploads are (not asked of the code under test)."""
    return Path(settings.MEDIA_ROOT) / "uploads" / str(job.uuid)


def refused(job: Job, *, days_ago: int) -> Job:
    """The job as the worker leaves one Slurm refused `days_ago` days ago: it never had a job directory."""
    when = timezone.now() - timedelta(days=days_ago)
    Job.objects.filter(pk=job.pk).update(
        status=Status.REJECTED, message="The cluster refused the job.", ended_at=when, updated_at=when
    )
    job.refresh_from_db()
    assert not Path(job.workdir).exists()
    return job


def line_of(output: str, job: Job) -> str:
    [line] = [line for line in output.splitlines() if str(job.uuid) in line]
    return line


def test_the_files_sent_with_a_job_wait_in_the_folder_the_records_policy_names(client, student, assignment, settings):
    job = submitted(client, student, **{"notes.txt": NOTES, "data.csv": DATA})

    folder = documented_folder(settings, job)
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == {"notes.txt": NOTES, "data.csv": DATA}


def test_a_dry_run_counts_the_staged_uploads_of_old_jobs_that_never_reached_the_cluster_and_removes_nothing(
    client, student, assignment, settings
):
    sent = refused(submitted(client, student, **{"notes.txt": NOTES, "data.csv": DATA}), days_ago=10)
    bare = refused(submitted(client, student), days_ago=9)  # nothing uploaded: no staging folder at all

    done = manage_in_process("purge_job_files", "--older-than", "7", "--dry-run")

    assert done.returncode == 0, done.stderr
    assert line_of(done.stdout, sent).endswith("uploads 2 file(s), 17\xa0bytes")
    assert line_of(done.stdout, bare).endswith("uploads 0 file(s), 0\xa0bytes")
    assert "Total (dry run, nothing removed): 2 job(s)" in done.stdout
    assert "staged uploads 2 file(s), 17\xa0bytes;" in done.stdout
    assert sorted(path.name for path in documented_folder(settings, sent).iterdir()) == ["data.csv", "notes.txt"]
    assert Job.objects.filter(files_purged_at__isnull=True).count() == 2


def test_the_purge_removes_the_staged_uploads_of_an_old_job_that_never_reached_the_cluster_and_its_pages_say_so(
    client, student, assignment, settings
):
    old = refused(submitted(client, student, **{"notes.txt": NOTES, "data.csv": DATA}), days_ago=10)
    recent = refused(submitted(client, student, **{"notes.txt": NOTES}), days_ago=2)

    done = manage_in_process("purge_job_files", "--older-than", "7")

    assert done.returncode == 0, done.stderr
    assert line_of(done.stdout, old).startswith(f"removed: job {old.uuid} of student1")
    assert line_of(done.stdout, old).endswith("uploads 2 file(s), 17\xa0bytes")
    assert not documented_folder(settings, old).exists()
    assert (documented_folder(settings, recent) / "notes.txt").read_bytes() == NOTES, "a recent job keeps its own"
    old.refresh_from_db()
    assert old.files_purged_at is not None
    page = client.get(reverse("jobs:job-resubmit", args=[old.uuid])).content.decode()
    assert "The files of attempt 1 were removed under the portal's retention policy" in page
    assert "kept from attempt 1" not in page


def test_a_link_among_a_jobs_staged_uploads_is_not_counted_and_its_target_is_left_alone(
    client, student, assignment, settings, tmp_path
):
    job = refused(submitted(client, student, **{"data.csv": DATA}), days_ago=10)
    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"not the job's\n")
    (documented_folder(settings, job) / "link.txt").symlink_to(target)  # however it came there: a restore, a hand

    dry = manage_in_process("purge_job_files", "--older-than", "7", "--dry-run")
    done = manage_in_process("purge_job_files", "--older-than", "7")

    assert dry.returncode == 0, dry.stderr
    assert line_of(dry.stdout, job).endswith("uploads 1 file(s), 8\xa0bytes")
    assert done.returncode == 0, done.stderr
    assert not documented_folder(settings, job).exists()
    assert target.read_bytes() == b"not the job's\n"


def test_forgetting_a_student_whose_job_never_reached_the_cluster_removes_its_staged_uploads(
    client, student, assignment, settings
):
    job = refused(submitted(client, student, **{"notes.txt": NOTES, "data.csv": DATA}), days_ago=1)

    dry = manage_in_process("forget_person", "student1", "--dry-run")
    done = manage_in_process("forget_person", "student1")

    assert dry.returncode == 0, dry.stderr
    assert f"would remove: files of job {job.uuid}: 0 file(s), 0\xa0bytes; uploads: 2 file(s)" in dry.stdout
    assert done.returncode == 0, done.stderr
    assert f"removed: files of job {job.uuid}: 0 file(s), 0\xa0bytes; uploads: 2 file(s)" in done.stdout
    assert not documented_folder(settings, job).exists()
