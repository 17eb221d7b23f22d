"""The Slurm configuration sbatch reads as the student is root's, never the service account's: sudo passes no
SLURM_CONF on (deploy/sudoers.labqueue) and the helper's `--slurm-conf=` takes only a file root alone could
have written. The attack: a compromised service account writes a slurm.conf with a CLI filter plugin, whose
script sbatch runs on the worker host as whichever student the account submits for. The rollback line of the
release before (sbatch with any arguments) is gone, and the students group holds only the courses' students.
"""

import grp
import os
import pwd
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helper_install import JOBDIR_HELPER, jobdir_helper_install
from tests.lab import lab_slurm_conf

pytestmark = pytest.mark.django_db  # for this test's own job root (tests/conftest.py)

CLI_FILTER = """
function slurm_cli_setup_defaults(options, early_pass)
  os.execute("id -un > {marker}")
  return slurm.SUCCESS
end
function slurm_cli_pre_submit(options, offset) return slurm.SUCCESS end
function slurm_cli_post_submit(offset, job_id, step_id) return slurm.SUCCESS end
"""


@pytest.fixture
def planted_config() -> Iterator[Path]:
    """A slurm.conf with a Lua CLI filter, written by the service account where it may write (and students
    read), and a folder where the filter's code, run as a student, leaves its mark."""
    folder = Path("/var/lib/labqueue/test-media") / f"planted-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o755, parents=True)
    account = pwd.getpwnam("labqueue")
    source = lab_slurm_conf()
    lines = [line for line in source.read_text().splitlines() if not line.startswith("CliFilterPlugins")]
    (folder / "slurm.conf").write_text("\n".join([*lines, "CliFilterPlugins=cli_filter/lua"]) + "\n")
    (folder / "gres.conf").write_text((source.parent / "gres.conf").read_text())
    (folder / "cli_filter.lua").write_text(CLI_FILTER.format(marker=folder / "marks" / "ran-as"))
    (folder / "marks").mkdir(mode=0o777)
    os.chmod(folder / "marks", 0o1777)
    for path in (folder, *folder.iterdir()):
        os.lchown(path, account.pw_uid, account.pw_gid)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def submit_as_service_account(job_root: Path, *argv: str, env: dict[str, str] | None = None):
    jobdir_helper_install()
    command = ["runuser", "-u", "labqueue", "--", "sudo", "-n", "-u", "student1", JOBDIR_HELPER, "submit"]
    command += ["/usr/bin/sbatch", str(job_root), "student1", str(uuid.uuid4()), *argv]
    listing = b"5 job.sh\ntrue\n"
    return subprocess.run(command, input=listing, capture_output=True, timeout=60, env=env)


def test_a_slurm_conf_the_service_account_wrote_never_reaches_sbatch_through_the_environment(job_root, planted_config):
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SLURM_CONF": str(planted_config / "slurm.conf")}
    done = submit_as_service_account(job_root, "--test-only", "-A", "cs101", "-t", "1", "--wrap", "true", env=env)

    assert not (planted_config / "marks" / "ran-as").exists(), "the planted CLI filter ran as the student"
    assert done.returncode == 0, done.stderr  # sbatch ran, with the lab's own configuration


def test_a_slurm_conf_the_service_account_wrote_is_refused_when_named_to_the_helper(job_root, planted_config):
    named = f"--slurm-conf={planted_config / 'slurm.conf'}"
    done = submit_as_service_account(job_root, named, "--test-only", "-A", "cs101", "-t", "1", "--wrap", "true")

    assert done.returncode == 3, done.stderr
    assert "is not a file only root can change" in done.stderr.decode()
    assert not (planted_config / "marks" / "ran-as").exists()


def test_a_slurm_conf_root_wrote_is_taken_when_named_to_the_helper(job_root):
    """How the tests give the worker a misbehaving controller: a copy of the lab's configuration made by root."""
    folder = job_root / "root-config"
    folder.mkdir(mode=0o755)
    shutil.copy(lab_slurm_conf(), folder / "slurm.conf")
    shutil.copy(lab_slurm_conf().parent / "gres.conf", folder / "gres.conf")

    done = submit_as_service_account(job_root, f"--slurm-conf={folder / 'slurm.conf'}", "--version")

    assert done.returncode == 0 and done.stdout.startswith(b"slurm"), done.stderr


def test_the_service_account_cannot_run_sbatch_itself_as_a_student():
    """The rollback line of the release before (`sbatch` with any arguments, and the helper's `prepare`) is gone."""
    done = subprocess.run(
        ["runuser", "-u", "labqueue", "--", "sudo", "-n", "-u", "student1", "/usr/bin/sbatch", "--version"],
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert done.returncode == 1 and "a password is required" in done.stderr


def test_the_students_group_holds_the_courses_students_only_and_the_portal_cannot_act_as_staff():
    assert sorted(grp.getgrnam("students").gr_mem) == ["student1", "student2", "student3", "student4"]
    for staff in ("ta1", "instructor1", "researcher1"):
        done = subprocess.run(
            ["runuser", "-u", "labqueue", "--", "sudo", "-n", "-u", staff, "/usr/bin/scancel", "--version"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 1 and "a password is required" in done.stderr, f"the portal may act as {staff}"
