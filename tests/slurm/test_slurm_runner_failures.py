"""How the runner reports commands that fail, hang, die or cannot start: real processes, no Slurm needed.

Each test runs a real program (sh, sleep, a file that is not executable) in place of a Slurm tool,
to show what the worker does when the tool prints a refusal, loses its controller, is killed, is
missing or leaves a process behind.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import slurm
from slurm import runner

from .helpers import shell

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def tools_from_path(settings) -> None:
    """These tests run ordinary programs (sh, sleep, env) through the runner: no Slurm bin dir in front,
    whichever cluster the suite talks to (make test-slurm24 sets one)."""
    settings.SLURM_BIN_DIR = ""


def test_an_empty_command_is_a_programming_error() -> None:
    with runner.command_log() as commands, pytest.raises(ValueError, match="^empty argv$"):
        runner.run([])

    assert commands == []


def test_a_refusal_on_stderr_is_rejected_with_slurms_own_words() -> None:
    refusal = "sbatch: error: Batch job submission failed: Invalid qos specification"

    with runner.command_log() as commands, pytest.raises(slurm.SlurmRejected) as caught:
        runner.run(shell(f"echo '{refusal}' >&2; exit 1"))

    assert caught.value.message == "Batch job submission failed: Invalid qos specification"
    assert caught.value.argv[:2] == ["sh", "-c"]
    assert [(command.tool, command.returncode) for command in commands] == [("sh", 1)]


def test_a_lost_controller_on_stderr_is_unavailable_not_rejected() -> None:
    lost = "squeue: error: slurm_load_jobs error: Unable to contact slurm controller (connect failure)"

    with pytest.raises(slurm.SlurmUnavailable) as caught:
        runner.run(shell(f"echo '{lost}' >&2; exit 1"))

    assert caught.value.message == "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


def test_a_command_killed_by_a_signal_is_unavailable() -> None:
    with runner.command_log() as commands, pytest.raises(slurm.SlurmUnavailable) as caught:
        runner.run(shell("kill -KILL $$"))

    assert commands[0].returncode == -signal.SIGKILL
    assert caught.value.message == f"sh exited with status {-signal.SIGKILL}"


def test_a_slurm_binary_the_worker_may_not_execute_is_unavailable(settings, tmp_path: Path) -> None:
    (tmp_path / "sbatch").touch()  # present, but without an execute bit
    (tmp_path / "sbatch").chmod(0o644)
    settings.SLURM_BIN_DIR = str(tmp_path)

    with runner.command_log() as commands, pytest.raises(slurm.SlurmUnavailable) as caught:
        runner.run(["sbatch", "--parsable", "/tmp/job.sh"])

    assert caught.value.message == (
        "sbatch could not be run on the worker (Permission denied; check PATH or SLURM_BIN_DIR)"
    )
    assert commands[0].returncode is None, "it never started"


def test_warnings_on_stderr_do_not_fail_a_command_that_succeeded(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="slurm.runner"):
        output = runner.run(shell("echo 'sbatch: warning: --mem is rounded up' >&2; echo 42"))

    assert output == "42\n"
    assert "sbatch: warning: --mem is rounded up" in caplog.text


@pytest.fixture
def escaped_pid_file(tmp_path: Path) -> Iterator[Path]:
    """Where the test's escaping process writes its pid; it is killed at the end whatever happens."""
    path = tmp_path / "escaped.pid"
    yield path
    if path.exists() and path.read_text().strip():
        try:
            os.kill(int(path.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_timeout_returns_even_when_a_process_left_the_group_and_holds_the_output(escaped_pid_file: Path) -> None:
    # A grandchild in a session of its own is out of reach of the process-group kill and keeps
    # stdout open: the runner must give up on reading after its grace period, not hang the worker.
    script = f"setsid sh -c 'echo $$ > {escaped_pid_file}; exec sleep 60' & sleep 60"
    started = time.monotonic()

    with pytest.raises(slurm.SlurmUnavailable) as caught:
        runner.run(shell(script), timeout=0.5)

    elapsed = time.monotonic() - started
    assert caught.value.message == "sh did not answer within 0.5 s"
    assert 5 <= elapsed < 15, elapsed
    assert os.path.exists(f"/proc/{escaped_pid_file.read_text().strip()}"), "the escaped process really held on"


def test_the_runner_works_with_its_defaults_when_django_is_not_configured() -> None:
    code = (
        "from slurm import runner\n"
        "print(runner.run_as_prefix('student1'))\n"
        "print(runner.resolve(['squeue']))\n"
        "print(runner.run(['echo', 'ok']), end='')\n"
    )
    env = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}

    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['sudo', '-n', '-u', 'student1']", "['squeue']", "ok"]
