"""The worker's side of a job directory before sbatch, without the cluster: a student's folder made by the
job-directory helper (run as root through sudo) before their first job, a folder that is not theirs or a job root
the helper refuses, each with what an operator must do; the file names and starter files the portal refuses, and a
Slurm configuration the helper refuses; and a worker without sbatch, which sends nothing and says so. Every test
runs the real helper and stops before sbatch: the worker's sbatch is missing (SLURM_BIN_DIR names a directory
without it), so the helper writes the job directory as the student and then cannot become sbatch; no Slurm tool is
ever run."""

import hashlib
import logging
import os
import pwd
from pathlib import Path

import pytest

import slurm
from jobs.dispatch import job_spec
from jobs.models import Status
from jobs.workdir import WorkdirError, WorkdirUnavailable, workdir_submit
from tests.conftest import job_row

SCRIPT = 'echo "hello"\n'
NO_SBATCH = (
    "the job directory could not be prepared: sbatch could not be run on the worker: "
    "/nonexistent-slurm-bin/sbatch failed to execute (No such file or directory)"
)


@pytest.fixture(autouse=True)
def no_sbatch(settings):
    """The worker finds no sbatch: whatever a test reaches, Slurm is never asked."""
    settings.SLURM_BIN_DIR = "/nonexistent-slurm-bin"


@pytest.fixture
def spec(student, assignment, job_root):
    job = job_row(student, assignment, status=Status.QUEUED)
    job.workdir = str(job_root / "student1" / str(job.uuid))
    job.save(update_fields=["workdir"])
    return job_spec(job)


@pytest.fixture
def upload(tmp_path) -> Path:
    path = tmp_path / "staged-data.txt"
    path.write_bytes(b"1,2,3\n")
    return path


def test_a_students_first_job_has_the_helper_make_their_folder_then_finds_no_sbatch_and_sends_nothing(
    spec, upload, job_root
):
    folder = job_root / "student1"
    folder.rmdir()  # student1 never submitted before

    with pytest.raises(WorkdirUnavailable) as raised:
        workdir_submit(spec, script=SCRIPT, files=[("data.txt", upload)])

    assert str(raised.value) == NO_SBATCH
    student1 = pwd.getpwnam("student1").pw_uid
    info = folder.stat()
    assert info.st_uid == student1 and oct(info.st_mode & 0o7777) == oct(0o2750)
    assert written(Path(spec.workdir)) == {"data.txt": b"1,2,3\n", "job.sh": SCRIPT.encode()}
    assert {path.stat().st_uid for path in Path(spec.workdir).iterdir()} == {student1}, "written as the student"


def written(workdir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in workdir.iterdir()}


def test_a_checks_script_is_written_under_its_own_name(spec):
    with pytest.raises(WorkdirUnavailable):
        workdir_submit(spec, script=SCRIPT, files=[], script_name="check-ab.sh")

    assert written(Path(spec.workdir)) == {"check-ab.sh": SCRIPT.encode()}


def test_a_helper_and_sbatch_that_do_not_finish_in_time_are_a_failure_on_the_portals_side(spec, settings):
    settings.LABQUEUE_JOBDIR_TIMEOUT = 0.001  # the job directory's file system does not answer in time

    with pytest.raises(WorkdirUnavailable) as raised:
        workdir_submit(spec, script=SCRIPT, files=[])

    assert str(raised.value) == (
        "the job directory could not be prepared: the helper and sbatch did not finish within 0.001 s"
    )


def test_a_starter_file_of_the_recorded_contents_is_written_into_the_job_directory(spec, upload):
    digest = hashlib.sha256(upload.read_bytes()).hexdigest()

    with pytest.raises(WorkdirUnavailable) as raised:
        workdir_submit(spec, script=SCRIPT, files=[("data.txt", upload)], digests={upload: digest})

    assert str(raised.value) == NO_SBATCH
    assert written(Path(spec.workdir))["data.txt"] == b"1,2,3\n"


def test_a_file_name_with_a_slash_is_refused_even_after_a_good_file(spec, upload):
    with pytest.raises(WorkdirError) as raised:
        workdir_submit(spec, script=SCRIPT, files=[("data.txt", upload), ("sub/x.txt", upload)])

    assert str(raised.value) == "The file name 'sub/x.txt' cannot be used in a job directory; rename the file."


def test_a_starter_file_changed_since_its_version_was_saved_refuses_the_job_with_what_to_do(spec, upload):
    with pytest.raises(WorkdirError) as raised:
        workdir_submit(spec, script=SCRIPT, files=[("data.txt", upload)], digests={upload: "0" * 64})

    assert str(raised.value) == (
        "The starter file 'data.txt' is no longer the one this job's version of the assignment was saved "
        "with, so the job was not sent. Tell the course staff: the instructor must upload it again."
    )


def test_a_folder_another_student_made_refuses_the_job_and_tells_student_and_operator_what_to_do(
    spec, job_root, caplog
):
    folder = job_root / "student1"
    os.chown(folder, pwd.getpwnam("student2").pw_uid, -1)
    os.chmod(folder, 0o777)

    with caplog.at_level(logging.ERROR, logger="jobs.workdir"), pytest.raises(WorkdirError) as raised:
        workdir_submit(spec, script=SCRIPT, files=[])

    assert str(raised.value) == (
        f"Your job folder {folder} on the cluster is not yours (another account made it or it is not a folder), "
        "so the portal will not put your jobs there and did not send this one. You cannot fix this yourself and "
        "it is not your fault: research computing must move that folder out of the way (as root, after checking "
        f"what is in it: `mv {folder} {folder}.old`) and run `labqueue-jobdir provision {job_root} student1` as "
        "root. Submit again after that."
    )
    uid = pwd.getpwnam("student2").pw_uid
    assert [record.getMessage() for record in caplog.records] == [
        f"The folder {folder} belongs to uid {uid}, not to student1 (or is not a directory): the portal will not "
        f"send student1's jobs until an operator moves it out of the way (as root: mv {folder} {folder}.old) and "
        f"runs, as root, labqueue-jobdir provision {job_root} student1"
    ]
    assert list(folder.iterdir()) == [], "nothing was written into the other student's folder"


def test_a_file_of_the_student_in_place_of_their_folder_refuses_the_job(spec, job_root):
    folder = job_root / "student1"
    folder.rmdir()
    folder.write_bytes(b"")
    os.chown(folder, pwd.getpwnam("student1").pw_uid, -1)

    with pytest.raises(WorkdirError, match="is not yours"):
        workdir_submit(spec, script=SCRIPT, files=[])


def test_a_job_root_the_portal_cannot_read_is_a_failure_on_the_portals_side(student, assignment, tmp_path):
    not_a_folder = tmp_path / "jobs"
    not_a_folder.write_bytes(b"")
    job = job_row(student, assignment, status=Status.QUEUED)
    job.workdir = str(not_a_folder / "student1" / str(job.uuid))

    with pytest.raises(WorkdirUnavailable) as raised:
        workdir_submit(job_spec(job), script=SCRIPT, files=[])

    assert str(raised.value) == f"the job root {not_a_folder} cannot be read by the portal (Not a directory)"


def test_the_helper_run_by_the_service_account_refuses_to_provision_in_a_job_root_of_another_group(
    spec, job_root, settings, caplog
):
    settings.SLURM_RUN_AS_PREFIX = "runuser -u labqueue -- sudo -n -u {user}"  # the worker as it runs in production
    os.chown(job_root, 0, 0)  # root:root, not the service account's group
    folder = job_root / "student1"
    folder.rmdir()

    with caplog.at_level(logging.ERROR, logger="jobs.workdir"), pytest.raises(WorkdirError) as raised:
        workdir_submit(spec, script=SCRIPT, files=[])

    refusal = str(raised.value)
    assert f"The job root {job_root} is not set up for the portal" in refusal
    assert f"install -d -o root -g labqueue -m 2751 {job_root}" in refusal
    assert [record.getMessage() for record in caplog.records] == [
        f"The folder {folder} could not be provisioned: {refusal}"
    ]
    assert not folder.exists()


def test_a_helper_that_does_not_provision_in_time_is_a_failure_on_the_portals_side(spec, job_root, settings):
    settings.LABQUEUE_JOBDIR_TIMEOUT = 0.001  # the job root's file system does not answer in time
    folder = job_root / "student1"
    folder.rmdir()

    with pytest.raises(WorkdirUnavailable) as raised:
        workdir_submit(spec, script=SCRIPT, files=[])

    assert str(raised.value).startswith(f"the folder {folder} could not be provisioned: ")
    assert str(raised.value).endswith("did not answer within 0.001 s")


def test_a_slurm_configuration_the_worker_names_is_handed_to_the_helper_which_refuses_one_a_student_could_change(
    spec, tmp_path, monkeypatch
):
    conf = tmp_path / "slurm.conf"  # under the test's temporary folder: not only root could have written it
    conf.write_text("ClusterName=elsewhere\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))

    with pytest.raises(slurm.SlurmRejected) as raised:
        workdir_submit(spec, script=SCRIPT, files=[])

    assert f"The Slurm configuration {conf} is not a file only root can change; ask research computing." in str(
        raised.value
    )
    assert not Path(spec.workdir).exists(), "refused before anything was written"
