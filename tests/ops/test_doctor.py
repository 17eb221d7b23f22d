"""`manage.py doctor` on the lab cluster, run as an operator runs it: as the service account, in its own
process, with the installation's environment. It passes on the lab; each category, broken on purpose (only
in this test's own environment: the shared services are never touched), fails and names the fix."""

import io
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from jobs.tasks import jobs_sync
from tests.service_account import REPO, free_port, service_argv, service_env, service_media  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]

STUDENT = "student1"  # a student's cluster account on the lab (scripts/labcluster)
LINE = re.compile(r"^(OK|FAIL|SKIP|WARN)\s+([^:]+): (.*)$")
#: The ceilings an installation sets for its cluster (doctor warns about any left to its default).
CEILINGS = {
    f"LABQUEUE_CEILING_{name}": value
    for name, value in (("GPUS_PER_JOB", "4"), ("CPUS_PER_JOB", "32"), ("MEM_MB_PER_JOB", "128000"))
    + (("MINUTES_PER_JOB", "1440"), ("JOBS_PER_STUDENT", "20"), ("GPU_HOURS_PER_STUDENT", "100"))
    + (("GPUS_PER_COURSE", "16"),)
}


def doctor(settings, *args: str, as_root: bool = False, **env: str) -> tuple[int, dict[str, tuple[str, str, str]]]:
    """Run `manage.py doctor` as the service account; its exit status and {check: (status, detail, fix)}."""
    argv = [sys.executable, "manage.py", "doctor", *args]
    result = subprocess.run(
        argv if as_root else service_argv(*argv),
        env=service_env(settings, **env),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    checks: dict[str, tuple[str, str, str]] = {}
    name = None
    for line in result.stdout.splitlines():
        if found := LINE.match(line):
            status, name, detail = found.groups()
            checks[name] = (status, detail, "")
        elif line.startswith("      fix: ") and name:
            checks[name] = (*checks[name][:2], line.removeprefix("      fix: "))
    assert checks, result.stdout + result.stderr
    return result.returncode, checks


def media(settings) -> Path:
    """This test's media root: a directory the service account owns (tests.service_account.service_media)."""
    return Path(settings.MEDIA_ROOT)


@pytest.fixture
def static_root(settings) -> Path:
    """Static files collected as an operator collects them (as the service account)."""
    root = media(settings) / "static"
    collect = [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"]
    env = service_env(settings, LABQUEUE_STATIC_ROOT=str(root))
    subprocess.run(service_argv(*collect), env=env, cwd=REPO, check=True, timeout=120)
    return root


@pytest.fixture
def other_job_root(job_root) -> Path:
    """A second job root beside this test's own (students must be able to reach it), made by root."""
    root = job_root.parent / f"{job_root.name}-other"
    root.mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def failed(checks: dict, name: str) -> tuple[str, str]:
    status, detail, fix = checks[name]
    assert status == "FAIL", checks[name]
    return detail, fix


def test_doctor_passes_on_the_lab_as_the_service_account_with_a_test_user(settings, static_root):
    jobs_sync()  # the beat's periodic work has run (a heartbeat)

    status, checks = doctor(settings, "--user", STUDENT, LABQUEUE_STATIC_ROOT=str(static_root), **CEILINGS)

    assert status == 0, checks
    assert {check: result[0] for check, result in checks.items()} == {
        "account": "OK",
        "database": "OK",
        "broker": "OK",
        "slurm versions": "OK",
        "munge": "OK",
        "other clusters": "OK",
        "job-dir helper": "OK",
        "job root": "OK",
        "run-as": "OK",
        "job files": "OK",
        "static files": "OK",
        "beat": "OK",
        "ceilings": "OK",
        "notebook sessions": "OK",
    }
    assert checks["job files"][1].endswith(
        f"made by the helper as {STUDENT}: the portal reads it but cannot write to it, other accounts cannot"
    )


def test_without_a_test_user_the_checks_that_need_one_are_skipped_and_say_how(settings, static_root):
    jobs_sync()

    status, checks = doctor(settings, LABQUEUE_STATIC_ROOT=str(static_root))

    assert status == 0
    assert checks["run-as"] == (
        "SKIP",
        "no test user given",
        "Run `manage.py doctor --user NETID` with a student's account.",
    )
    assert checks["job files"][0] == "SKIP"


def test_run_as_root_doctor_fails_and_says_to_run_it_as_the_service_account(settings, static_root):
    """In this process (root), as `manage.py doctor` runs it: the checks of what the service account may do
    say nothing as root and are skipped."""
    jobs_sync()
    settings.STATIC_ROOT = static_root
    output = io.StringIO()

    with pytest.raises(SystemExit) as exit_status:
        call_command("doctor", user=STUDENT, stdout=output)

    assert exit_status.value.code == 1
    lines = output.getvalue().splitlines()
    assert lines[0].startswith("FAIL  account: doctor runs as root; the web server and the worker must not")
    assert lines[1].startswith("      fix: Run doctor as the service account the portal runs as")
    for check in ("job root", "run-as", "job files"):
        assert f"SKIP  {check}: doctor runs as root" in lines
    for check in ("database", "broker", "slurm versions", "munge", "job-dir helper", "static files", "beat"):
        assert any(line.startswith(f"OK    {check}: ") for line in lines), (check, lines)
    assert lines[-1] == "doctor: 1 check(s) failed: account"


def test_a_database_that_does_not_exist_fails_and_says_to_check_database_url(settings):
    status, checks = doctor(
        settings, DATABASE_URL="postgresql://labqueue:labqueue@127.0.0.1:5432/labqueue_no_such_database"
    )

    assert status == 1
    detail, fix = failed(checks, "database")
    assert detail.startswith("127.0.0.1:5432/labqueue_no_such_database could not be reached")
    assert 'database "labqueue_no_such_database" does not exist' in detail
    assert fix.startswith("Check DATABASE_URL") and "the database exists" in fix


def test_a_broker_on_a_closed_port_fails_and_says_to_start_redis_or_correct_the_url(settings):
    port = free_port()

    status, checks = doctor(settings, LABQUEUE_REDIS_URL=f"redis://127.0.0.1:{port}/0")

    assert status == 1
    detail, fix = failed(checks, "broker")
    assert detail.startswith(f"redis://127.0.0.1:{port}/0 did not answer")
    assert fix.startswith("Start Redis, or correct LABQUEUE_REDIS_URL")


def test_an_old_slurm_client_fails_against_the_controller_and_says_which_release_to_install(settings):
    """The one stub in this file: `sinfo` printing an old version (no old Slurm is installed on the lab);
    every other tool in the directory is the real one."""
    bin_dir = media(settings) / "old-slurm"
    bin_dir.mkdir()
    for tool in ("sbatch", "squeue", "scancel", "sacct", "sacctmgr", "scontrol"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    (bin_dir / "sinfo").write_text("#!/bin/sh\necho 'slurm 20.02.7'\n")
    (bin_dir / "sinfo").chmod(0o755)
    bin_dir.chmod(0o755)

    status, checks = doctor(settings, LABQUEUE_SLURM_BIN_DIR=str(bin_dir))

    assert status == 1
    detail, fix = failed(checks, "slurm versions")
    assert re.fullmatch(
        r"controller (\d+\.\d+\.\d+); sinfo 20\.02\.7: \d major releases older than the controller, "
        r"which supports clients up to \d older",
        detail,
    ), detail
    controller = detail.split()[1].rstrip(";")
    assert fix.startswith(f"Install the Slurm client tools of the controller's release ({controller})")


def test_munge_that_cannot_be_reached_fails_and_says_to_start_munged_or_mount_its_socket(settings):
    status, checks = doctor(settings, LABQUEUE_MUNGE_SOCKET="/nonexistent/munge.socket.2")

    assert status == 1
    detail, fix = failed(checks, "munge")
    assert detail.startswith("`munge -n | unmunge` failed")
    assert "Did you start munged?" in detail
    assert "mount the host's munge socket directory" in fix


def test_a_run_as_prefix_the_sudoers_rule_does_not_allow_fails_and_points_at_the_rule(settings):
    status, checks = doctor(settings, "--user", STUDENT, LABQUEUE_SLURM_RUN_AS_PREFIX="sudo -n -g root -u {user}")

    assert status == 1
    detail, fix = failed(checks, "run-as")
    assert detail.startswith(f"`sudo -n -g root -u {STUDENT} scancel --version` failed")
    assert "a password is required" in detail
    assert fix.startswith("Install deploy/sudoers.labqueue as /etc/sudoers.d/labqueue")


def test_a_job_dir_helper_the_service_account_could_change_fails(settings, jobdir_helper):
    helper = media(settings) / "labqueue-jobdir"
    shutil.copyfile(jobdir_helper, helper)
    helper.chmod(0o775)

    status, checks = doctor(settings, LABQUEUE_JOBDIR_HELPER=str(helper))

    assert status == 1
    detail, fix = failed(checks, "job-dir helper")
    assert "an account other than root could change what runs as every student" in detail
    assert fix.startswith(f"Install it root-owned: `install -o root -g root -m 0755 scripts/labqueue-jobdir {helper}`")


@pytest.fixture
def helper_folder(job_root) -> Path:
    """A root-owned folder the service account can reach, with the checkout's helper installed in it as an
    operator installs it (README, "Install"), compiled unless a test compiles it itself."""
    folder = job_root.parent / f"{job_root.name}-libexec"
    folder.mkdir(mode=0o755)
    shutil.copyfile(REPO / "scripts" / "labqueue-jobdir", folder / "labqueue-jobdir")
    (folder / "labqueue-jobdir").chmod(0o755)
    shutil.copyfile(REPO / "scripts" / "labqueue_jobdir.py", folder / "labqueue_jobdir.py")
    (folder / "labqueue_jobdir.py").chmod(0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def compile_helper(folder: Path) -> None:
    subprocess.run(["/usr/bin/python3", "-m", "py_compile", str(folder / "labqueue_jobdir.py")], check=True)


def test_a_job_dir_helper_whose_code_the_service_account_could_change_fails(settings, helper_folder):
    compile_helper(helper_folder)
    module = helper_folder / "labqueue_jobdir.py"
    os.chown(module, pwd.getpwnam("labqueue").pw_uid, -1)

    status, checks = doctor(settings, LABQUEUE_JOBDIR_HELPER=str(helper_folder / "labqueue-jobdir"))

    assert status == 1
    detail, fix = failed(checks, "job-dir helper")
    assert detail.startswith(f"{module} is owned by uid {pwd.getpwnam('labqueue').pw_uid} with mode -rw-r--r--")
    assert "an account other than root could change what runs as every student" in detail
    assert f"`/usr/bin/python3 -m py_compile {module}`" in fix


def test_a_job_dir_helper_whose_compiled_code_others_could_replace_fails(settings, helper_folder):
    compile_helper(helper_folder)
    (helper_folder / "__pycache__").chmod(0o777)

    status, checks = doctor(settings, LABQUEUE_JOBDIR_HELPER=str(helper_folder / "labqueue-jobdir"))

    assert status == 1
    detail, _ = failed(checks, "job-dir helper")
    assert detail.startswith(f"{helper_folder / '__pycache__'} is owned by uid 0 with mode drwxrwxrwx")


def test_a_job_dir_helper_without_its_code_fails_and_says_how_to_install_it(settings, helper_folder):
    (helper_folder / "labqueue_jobdir.py").unlink()

    status, checks = doctor(settings, LABQUEUE_JOBDIR_HELPER=str(helper_folder / "labqueue-jobdir"))

    assert status == 1
    detail, fix = failed(checks, "job-dir helper")
    assert detail == f"{helper_folder / 'labqueue_jobdir.py'}: No such file or directory"
    assert "`install -o root -g root -m 0644 scripts/labqueue_jobdir.py" in fix


def test_a_job_dir_helper_not_compiled_or_compiled_before_an_update_is_a_warning(settings, helper_folder):
    helper, module = str(helper_folder / "labqueue-jobdir"), helper_folder / "labqueue_jobdir.py"
    _, checks = doctor(settings, LABQUEUE_JOBDIR_HELPER=helper)
    assert checks["job-dir helper"] == (
        "WARN",
        f"{module} has no current compiled file: the helper compiles it on every run (about 5 ms of CPU per job)",
        f"Compile it as root: `/usr/bin/python3 -m py_compile {module}`.",
    )

    compile_helper(helper_folder)
    assert doctor(settings, LABQUEUE_JOBDIR_HELPER=helper)[1]["job-dir helper"][0] == "OK"

    with module.open("a") as code:  # an update installed without compiling it again
        code.write("# updated\n")
    assert doctor(settings, LABQUEUE_JOBDIR_HELPER=helper)[1]["job-dir helper"][0] == "WARN"


def test_the_installed_helper_runs_its_compiled_code(jobdir_helper):
    """What sudo runs reads the module compiled at install, not the source: no compiling on each submission."""
    ran = subprocess.run(["/usr/bin/python3", "-IS", "-v", jobdir_helper], capture_output=True, text=True)

    assert ran.returncode == 2 and "usage: labqueue-jobdir submit" in ran.stderr  # it ran: no mode given
    compiled = f"{Path(jobdir_helper).parent}/__pycache__/labqueue_jobdir.{sys.implementation.cache_tag}.pyc"
    assert f"code object from '{compiled}'" in ran.stderr, ran.stderr[-2000:]


def test_a_job_root_with_the_wrong_mode_fails_and_gives_the_commands(settings, other_job_root):
    root = other_job_root
    root.chmod(0o755)

    status, checks = doctor(settings, LABQUEUE_JOB_ROOT=str(root))

    assert status == 1
    detail, fix = failed(checks, "job root")
    assert detail.startswith(f"{root} is root:root mode 0755; it must be root:labqueue mode 2751")
    assert fix.startswith(f"`install -d -o root -g labqueue -m 2751 {root}`")


def test_job_directories_the_portal_cannot_read_fail_and_name_the_job_roots_group(settings, other_job_root):
    """A job root of the wrong group, with a student's folder made in it (by an older release, or by hand:
    the helper's `provision` refuses such a job root): the helper still makes the job directory in it, but the
    portal's account cannot read it."""
    root = other_job_root
    root.chmod(0o2751)
    folder = root / STUDENT
    folder.mkdir()
    os.chown(folder, pwd.getpwnam(STUDENT).pw_uid, 0)
    folder.chmod(0o2750)

    status, checks = doctor(settings, "--user", STUDENT, LABQUEUE_JOB_ROOT=str(root))

    assert status == 1
    detail, fix = failed(checks, "job files")
    assert detail.startswith("the portal's account cannot read ")
    assert detail.endswith(f"written by {STUDENT}: Permission denied")
    assert fix.startswith("The job root's group must be the portal's service account's group")


def test_a_job_root_of_another_group_gets_no_students_folder_and_the_doctor_gives_the_command(settings, other_job_root):
    root = other_job_root
    root.chmod(0o2751)

    status, checks = doctor(settings, "--user", STUDENT, LABQUEUE_JOB_ROOT=str(root))

    assert status == 1
    detail, _ = failed(checks, "job files")
    assert "it must be owned by root and group labqueue and writable by nobody else (`install -d -o root" in detail
    assert not (root / STUDENT).exists(), "the helper's `provision` made nothing in it"


def test_missing_static_files_fail_and_say_to_run_collectstatic(settings):
    missing = media(settings) / "never-collected"

    status, checks = doctor(settings, LABQUEUE_STATIC_ROOT=str(missing))

    assert status == 1
    detail, fix = failed(checks, "static files")
    assert detail.startswith(f"{missing}/") and detail.endswith(" is missing: pages would have no style")
    assert fix == "Run `manage.py collectstatic --noinput` with the same LABQUEUE_STATIC_ROOT as the web server."


def test_no_heartbeat_of_the_job_status_sync_fails_and_says_to_start_one_beat(settings):
    status, checks = doctor(settings)

    assert status == 1
    detail, fix = failed(checks, "beat")
    assert detail == "the job-status sync has never finished"
    assert fix.startswith("Start exactly one Celery beat")


def test_in_debug_mode_missing_static_files_are_no_failure_since_debug_serves_them(settings):
    missing = media(settings) / "never-collected"

    status, checks = doctor(settings, LABQUEUE_STATIC_ROOT=str(missing), LABQUEUE_DEBUG="1")

    assert checks["static files"][0] == "OK", checks["static files"]
    assert "LABQUEUE_DEBUG=1 serves the static files" in checks["static files"][1]


def test_the_beat_check_names_the_sync_interval_beat_really_uses(settings):
    jobs_sync()  # a heartbeat just now

    status, checks = doctor(settings, LABQUEUE_SYNC_SECONDS="2")

    assert checks["beat"][0] == "OK", checks["beat"]
    assert checks["beat"][1].endswith("(every 2 s)"), checks["beat"]
