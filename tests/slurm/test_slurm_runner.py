"""The one runner every Slurm command goes through."""

from __future__ import annotations

import pwd
import subprocess
import time
from pathlib import Path

import pytest

import slurm
from slurm import runner


@pytest.fixture(autouse=True)
def tools_from_path(settings) -> None:
    """These tests run ordinary programs (sh, sleep, env) through the runner: no Slurm bin dir in front,
    whichever cluster the suite talks to (make test-slurm24 sets one)."""
    settings.SLURM_BIN_DIR = ""


def test_a_command_over_its_timeout_is_unavailable_and_counted() -> None:
    before = runner.command_counts["sleep"]
    started = time.monotonic()

    with pytest.raises(slurm.SlurmUnavailable) as caught:
        runner.run(["sleep", "10"], timeout=0.3)

    assert time.monotonic() - started < 3
    assert caught.value.message == "sleep did not answer within 0.3 s"
    assert caught.value.argv == ["sleep", "10"]
    assert runner.command_counts["sleep"] == before + 1


def test_the_timeout_comes_from_settings_when_not_given(settings) -> None:
    settings.SLURM_COMMAND_TIMEOUT = 0.3

    with pytest.raises(slurm.SlurmUnavailable, match="within 0.3 s"):
        runner.run(["sleep", "10"])


def test_the_environment_is_minimal_and_holds_no_worker_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", "do-not-leak")
    monkeypatch.setenv("LABQUEUE_SECRET_KEY", "do-not-leak")
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/slurm.conf")

    output = runner.run(["env"], env_extra={"SLURM_TIME_FORMAT": "%s"})

    assert dict(line.split("=", 1) for line in output.splitlines()) == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "SLURM_CONF": "/etc/slurm/slurm.conf",
        "SLURM_TIME_FORMAT": "%s",
    }


def test_a_failing_command_without_a_known_message_is_rejected() -> None:
    with pytest.raises(slurm.SlurmRejected) as caught:
        runner.run(["false"])

    assert caught.value.message == "false exited with status 1"


def test_a_missing_binary_is_unavailable_not_rejected(settings, tmp_path: Path) -> None:
    settings.SLURM_BIN_DIR = str(tmp_path)
    before = runner.command_counts["squeue"]

    with pytest.raises(slurm.SlurmUnavailable) as caught:
        slurm.queue()

    assert caught.value.message == (
        "squeue could not be run on the worker (No such file or directory; check PATH or SLURM_BIN_DIR)"
    )
    assert caught.value.argv[0] == str(tmp_path / "squeue")
    assert runner.command_counts["squeue"] == before + 1


def test_bare_tool_names_are_looked_up_in_slurm_bin_dir(settings) -> None:
    settings.SLURM_BIN_DIR = "/usr/bin"

    with runner.command_log() as commands:
        runner.run(["true"])

    assert [(command.tool, command.argv) for command in commands] == [("true", ["/usr/bin/true"])]
    assert commands[0].returncode == 0
    assert commands[0].seconds >= 0


def test_a_username_that_could_pass_for_an_option_is_refused() -> None:
    with pytest.raises(ValueError):
        runner.run(["true"], run_as="-rf")


def test_the_run_as_prefix_comes_from_settings(settings) -> None:
    settings.SLURM_RUN_AS_PREFIX = "env LQ_AS={user}"

    output = runner.run(["env"], run_as="student9")

    assert "LQ_AS=student9" in output.splitlines()


@pytest.mark.slurm
@pytest.mark.usefixtures("cluster")
def test_commands_run_as_the_student_through_runuser() -> None:
    assert runner.run(["id", "-un"], run_as="student1") == "student1\n"


@pytest.mark.slurm
@pytest.mark.usefixtures("cluster")
def test_a_timeout_kills_the_command_behind_the_run_as_prefix() -> None:
    with pytest.raises(slurm.SlurmUnavailable):
        runner.run(["sleep", "31.4159"], run_as="student1", timeout=0.5)

    uid = str(pwd.getpwnam("student1").pw_uid)
    left = subprocess.run(["pgrep", "-u", uid, "-f", "sleep 31.4159"], capture_output=True, text=True)
    assert left.stdout == ""


def test_output_that_is_not_utf8_is_read_with_replacement_characters() -> None:
    assert runner.run(["printf", "caf\\351|ok"]) == "caf\ufffd|ok"
