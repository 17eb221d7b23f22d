"""What the runner promises its callers and operators: paths, settings, stdin, the command log and its logs.

Pure: real harmless programs (true, cat, sh, sleep) stand in for Slurm tools; no cluster, no database.
"""

from __future__ import annotations

import locale
import logging
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import LazySettings

import slurm
from slurm import runner

from .helpers import shell


@pytest.fixture(autouse=True)
def tools_from_path(settings) -> None:
    """Ordinary programs from the PATH, whichever cluster the suite talks to."""
    settings.SLURM_BIN_DIR = ""


def executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


# --- absolute(): where a bare tool name is found ------------------------------------------------------


def test_a_bare_tool_name_is_found_on_the_path_commands_run_with() -> None:
    assert runner.absolute("true") == "/usr/bin/true"


def test_a_tool_only_on_the_workers_own_path_is_not_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # run() gives commands BASE_ENV's PATH, not the worker's: a tool found only on the worker's PATH would not run.
    executable(tmp_path / "lq-private-tool")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")

    with pytest.raises(slurm.SlurmMisconfigured) as caught:
        runner.absolute("lq-private-tool")

    assert caught.value.message == (
        "lq-private-tool could not be run on the worker (not found; check PATH or SLURM_BIN_DIR)"
    )
    assert caught.value.argv == ["lq-private-tool"]


def test_a_tool_in_slurm_bin_dir_is_named_by_its_full_path_there(settings, tmp_path: Path) -> None:
    # No lookup: the path is what run() will execute, and run() reports it if it is missing.
    settings.SLURM_BIN_DIR = str(tmp_path)

    assert runner.absolute("sbatch") == str(tmp_path / "sbatch")


# --- resolve(): SLURM_BIN_DIR only for bare names -----------------------------------------------------


def test_a_program_given_by_a_relative_or_absolute_path_is_run_as_given(settings) -> None:
    settings.SLURM_BIN_DIR = "/opt/slurm/bin"

    assert runner.resolve(["./bin/jobdir-helper", "--check"]) == ["./bin/jobdir-helper", "--check"]
    assert runner.resolve(["/usr/bin/sbatch"]) == ["/usr/bin/sbatch"]
    assert runner.resolve(["sbatch", "--parsable"]) == ["/opt/slurm/bin/sbatch", "--parsable"]


def test_without_slurm_bin_dir_in_settings_tools_come_from_the_path(settings) -> None:
    del settings.SLURM_BIN_DIR

    assert runner.resolve(["squeue", "-h"]) == ["squeue", "-h"]


# --- settings read when a command runs ----------------------------------------------------------------


def test_without_a_run_as_prefix_in_settings_commands_run_through_sudo(settings) -> None:
    del settings.SLURM_RUN_AS_PREFIX

    assert runner.run_as_prefix("student1") == ["sudo", "-n", "-u", "student1"]


def test_an_empty_run_as_prefix_runs_the_command_directly(settings) -> None:
    settings.SLURM_RUN_AS_PREFIX = ""

    assert runner.run_as_prefix("student1") == []
    assert runner.run(["echo", "ok"], run_as="student1") == "ok\n"


def test_without_a_timeout_in_settings_commands_still_run(settings) -> None:
    del settings.SLURM_COMMAND_TIMEOUT

    assert runner.run(["echo", "ok"]) == "ok\n"


def test_settings_configured_in_code_are_read_without_django_settings_module(
    settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process that calls settings.configure() has no DJANGO_SETTINGS_MODULE; its settings still count.
    settings.SLURM_RUN_AS_PREFIX = "runuser -u {user} --"
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)

    assert runner.run_as_prefix("student1") == ["runuser", "-u", "student1", "--"]


def test_settings_not_loaded_yet_are_loaded_from_django_settings_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A worker that calls the runner before django.setup() must still use the site's settings, not the defaults.
    (tmp_path / "lq_runner_site_settings.py").write_text('SLURM_RUN_AS_PREFIX = "runuser -u {user} --"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "lq_runner_site_settings")
    monkeypatch.setattr(runner, "settings", LazySettings())

    assert runner.run_as_prefix("student1") == ["runuser", "-u", "student1", "--"]


def test_without_any_django_settings_the_defaults_apply_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)
    monkeypatch.setattr(runner, "settings", LazySettings())

    assert runner.run_as_prefix("student1") == ["sudo", "-n", "-u", "student1"]
    assert runner.resolve(["squeue"]) == ["squeue"]


# --- stdin and output ---------------------------------------------------------------------------------


def test_a_command_reads_the_file_it_is_given_on_stdin(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho hello\n")

    with script.open("rb") as stdin:
        assert runner.run(["cat"], stdin=stdin) == "#!/bin/sh\necho hello\n"


@pytest.fixture
def worker_stdin_with_data() -> Iterator[None]:
    """The worker's own file descriptor 0 holds data, as it might under a process manager."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"#!/bin/sh\necho from the worker's stdin\n")
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    os.close(read_end)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)


@pytest.mark.usefixtures("worker_stdin_with_data")
def test_a_command_never_reads_the_workers_own_stdin() -> None:
    # sbatch without a script file reads the script from stdin: it must read nothing unless given a file.
    assert runner.run(["cat"]) == ""


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    saved = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)


@pytest.mark.usefixtures("ascii_locale")
def test_output_is_read_as_utf8_whatever_the_workers_locale() -> None:
    assert runner.run(["printf", "caf\\303\\251"]) == "caf\u00e9"


# --- timeouts -----------------------------------------------------------------------------------------


def test_a_timeout_also_kills_what_the_command_started(tmp_path: Path) -> None:
    # Behind the run-as prefix the Slurm tool is a grandchild: the whole group goes, and the runner returns at once.
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()

    with pytest.raises(slurm.SlurmTimeout):
        runner.run(shell(f"sleep 60 & echo $! > {pid_file}; wait"), timeout=0.5)

    assert time.monotonic() - started < 4
    wait_until_gone(pid_file.read_text().strip(), "the grandchild survived the timeout")


def test_a_command_that_ignores_sigterm_is_killed_after_a_grace(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()

    with pytest.raises(slurm.SlurmTimeout):
        runner.run(shell(f"trap '' TERM; sleep 60 & echo $! > {pid_file}; wait"), timeout=0.5)

    assert time.monotonic() - started < 4 + runner.STOP_GRACE_SECONDS, "the runner waited for the command to end"
    wait_until_gone(pid_file.read_text().strip(), "a command ignoring SIGTERM outlived the timeout")


class CutShort(Exception):
    """What a signal handler raises in the middle of a command: Celery's SoftTimeLimitExceeded, at a task's
    soft time limit."""


def test_a_command_the_worker_cuts_short_stops_at_once_with_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"

    def cut_short(signum, frame):
        raise CutShort

    previous = signal.signal(signal.SIGALRM, cut_short)
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(CutShort):
            runner.run(shell(f"sleep 60 & echo $! > {pid_file}; wait"), timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    assert time.monotonic() - started < 4, "the runner waited for the command it was told to give up"
    wait_until_gone(pid_file.read_text().strip(), "the grandchild survived the command being cut short")


def wait_until_gone(pid: str, what: str) -> None:
    """Wait (3 s at most) until process `pid` has ended (gone, or a zombie no one reaped yet)."""
    deadline = time.monotonic() + 3
    while os.path.exists(f"/proc/{pid}") and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]:
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


# --- the command log and observers --------------------------------------------------------------------


def test_the_command_log_records_whom_a_command_ran_as_and_its_argv_without_the_prefix(settings) -> None:
    settings.SLURM_RUN_AS_PREFIX = "env LQ_AS={user}"

    with runner.command_log() as commands:
        runner.run(["true"], run_as="student9")

    assert [(c.tool, c.argv, c.run_as, c.returncode) for c in commands] == [("true", ["true"], "student9", 0)]


def test_the_command_log_records_how_long_a_command_took() -> None:
    with runner.command_log() as commands:
        runner.run(["sleep", "0.2"])

    assert 0.2 <= commands[0].seconds < 5


def test_observers_see_every_command_after_it_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[runner.Command] = []
    monkeypatch.setattr(runner, "observers", [seen.append])

    runner.run(shell("exit 0"))

    assert [(c.tool, c.argv, c.returncode) for c in seen] == [("sh", ["sh", "-c", "exit 0"], 0)]


def test_an_observer_that_fails_is_logged_and_the_command_still_returns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(command: runner.Command) -> None:
        raise RuntimeError("metrics backend down")

    monkeypatch.setattr(runner, "observers", [broken])

    with caplog.at_level(logging.ERROR, logger="slurm.runner"):
        assert runner.run(["echo", "ok"]) == "ok\n"

    [record] = caplog.records
    assert record.getMessage() == "slurm: an observer of echo failed"
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "metrics backend down"


# --- errors and what operators see in the log ---------------------------------------------------------


def test_a_refusal_printed_on_stdout_only_is_rejected_with_its_words() -> None:
    with pytest.raises(slurm.SlurmRejected) as caught:
        runner.run(shell("echo 'Invalid account specified'; exit 1"))

    assert caught.value.message == "Invalid account specified"


def test_a_missing_binary_is_logged_as_an_error_with_the_command(
    settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings.SLURM_BIN_DIR = str(tmp_path)

    with caplog.at_level(logging.ERROR, logger="slurm.runner"), pytest.raises(slurm.SlurmMisconfigured):
        runner.run(["sbatch", "--parsable"])

    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage() == (
        f"slurm: cannot run {tmp_path}/sbatch --parsable: [Errno 2] No such file or directory: '{tmp_path}/sbatch'"
    )


def test_a_timeout_is_logged_as_a_warning_with_the_command(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="slurm.runner"), pytest.raises(slurm.SlurmTimeout):
        runner.run(["sleep", "10"], timeout=0.3)

    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "slurm: sleep 10 timed out after 0.3s")
    ]


def test_every_command_is_logged_at_debug_with_its_exit_status_and_duration(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="slurm.runner"), pytest.raises(slurm.SlurmRejected):
        runner.run(shell("exit 3"))

    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(debug) == 1
    assert re.fullmatch(r"slurm: sh -c 'exit 3' -> 3 in \d+\.\d{3}s", debug[0]), debug


def test_a_rejection_is_logged_at_info_with_the_command_status_and_stderr(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="slurm.runner"), pytest.raises(slurm.SlurmRejected):
        runner.run(shell("echo 'sbatch: error: Invalid partition name specified' >&2; exit 1"))

    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.INFO,
            "slurm: sh -c 'echo '\"'\"'sbatch: error: Invalid partition name specified'\"'\"' >&2; exit 1' "
            "failed (1): sbatch: error: Invalid partition name specified",
        )
    ]


def test_an_unanswered_command_is_logged_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="slurm.runner"), pytest.raises(slurm.SlurmUnavailable):
        runner.run(shell("echo 'Socket timed out on send/recv operation' >&2; exit 1"))

    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert caplog.records[0].getMessage().endswith("failed (1): Socket timed out on send/recv operation")


def test_stderr_of_a_command_that_succeeded_is_logged_at_debug_under_the_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="slurm.runner"):
        runner.run(shell("echo '  sbatch: warning: --mem is rounded up  ' >&2; echo 42"))

    assert "slurm: sh stderr: sbatch: warning: --mem is rounded up" in [r.getMessage() for r in caplog.records]
