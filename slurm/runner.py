"""The one place where Slurm commands are run.

Every command goes through :func:`run`: an argv list (never a shell), a timeout,
a minimal environment (no Django secret can reach sbatch or the job), the run-as
prefix when a command must run as the student, and typed errors. Settings are read
when a command runs, never at import time.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from django.conf import settings

from .errors import SlurmError, SlurmMisconfigured, SlurmTimeout, SlurmUnavailable, classify
from .records import check_username

logger = logging.getLogger(__name__)

DEFAULT_RUN_AS_PREFIX = "sudo -n -u {user}"
DEFAULT_TIMEOUT = 30.0
#: How long a command cut short gets to end after SIGTERM, before SIGKILL.
STOP_GRACE_SECONDS = 2.0
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
# Variables taken from the worker's own environment when set there.
PASSED_THROUGH = ("SLURM_CONF",)


@dataclass(frozen=True)
class Command:
    """One command run by the runner, for tests and diagnostics."""

    tool: str
    argv: list[str]
    run_as: str | None
    seconds: float
    returncode: int | None  # None when it was killed by the timeout or never started


#: Commands run per tool ("sbatch", "squeue", ...) since the process started,
#: successful or not. Tests use it to prove a sync cycle runs a constant number.
command_counts: Counter[str] = Counter()
_lock = threading.Lock()
_logs: list[list[Command]] = []

#: Called with every command after it ran, in the thread that ran it. The portal registers its metrics
#: recorder here when Django starts (reports/apps.py), so this package imports no app. An observer that
#: raises is logged and ignored: counting a command never breaks it.
observers: list[Callable[[Command], None]] = []


@contextmanager
def command_log() -> Iterator[list[Command]]:
    """Collect the commands run inside the ``with`` block (any thread)."""
    log: list[Command] = []
    with _lock:
        _logs.append(log)
    try:
        yield log
    finally:
        with _lock:
            _logs.remove(log)


def _setting(name: str, default):
    """A Django setting read now; the default also when Django is not configured at all."""
    if not settings.configured and not os.environ.get("DJANGO_SETTINGS_MODULE"):
        return default
    return getattr(settings, name, default)


def _record(command: Command) -> None:
    with _lock:
        command_counts[command.tool] += 1
        for log in _logs:
            log.append(command)
    for observer in list(observers):
        try:
            observer(command)
        except Exception:
            logger.exception("slurm: an observer of %s failed", command.tool)


def resolve(argv: Sequence[str]) -> list[str]:
    """Put SLURM_BIN_DIR in front of a bare tool name; leave paths alone."""
    argv = list(argv)
    bin_dir = _setting("SLURM_BIN_DIR", "") or ""
    if bin_dir and "/" not in argv[0]:
        argv[0] = os.path.join(bin_dir, argv[0])
    return argv


def absolute(tool: str) -> str:
    """The full path of the Slurm tool run() runs for a bare name (SLURM_BIN_DIR, else the PATH it runs with)."""
    path = resolve([tool])[0]
    found = path if "/" in path else shutil.which(path, path=BASE_ENV["PATH"])
    if not found:
        raise SlurmMisconfigured(
            f"{tool} could not be run on the worker (not found; check PATH or SLURM_BIN_DIR)", [tool]
        )
    return found


def run_as_prefix(user: str) -> list[str]:
    """The argv prefix that runs a command as ``user`` (``{user}`` substituted)."""
    check_username(user)
    template = _setting("SLURM_RUN_AS_PREFIX", DEFAULT_RUN_AS_PREFIX) or ""
    return [token.replace("{user}", user) for token in shlex.split(template)]


def build_env(env_extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(BASE_ENV)
    for name in PASSED_THROUGH:
        if os.environ.get(name):
            env[name] = os.environ[name]
    env.update(env_extra or {})
    return env


def run(
    argv: list[str],
    *,
    timeout: float | None = None,
    run_as: str | None = None,
    env_extra: dict[str, str] | None = None,
    stdin: BinaryIO | None = None,
    tool: str = "",
) -> str:
    """Run one Slurm command (or the job-directory helper) and return its stdout.

    ``stdin`` is an open file (with a descriptor) the command reads; by default it reads nothing. ``tool``
    names the command in counts, metrics and logs when the program is not the tool itself (the helper that
    ends by running sbatch counts as sbatch).

    Raises SlurmUnavailable (no answer, timeout, missing binary) or SlurmRejected.
    """
    if not argv:
        raise ValueError("empty argv")
    tool = tool or os.path.basename(argv[0])
    argv = resolve(argv)
    full = (run_as_prefix(run_as) if run_as else []) + argv
    if timeout is None:
        timeout = float(_setting("SLURM_COMMAND_TIMEOUT", DEFAULT_TIMEOUT))
    started = time.monotonic()
    returncode: int | None = None
    try:
        returncode, stdout, stderr = _execute(full, timeout, build_env(env_extra), stdin)
    except OSError as exc:  # missing or not executable: the deployment is broken
        raise _not_runnable(full, exc) from exc
    except subprocess.TimeoutExpired as exc:
        logger.warning("slurm: %s timed out after %.1fs", shlex.join(full), timeout)
        raise SlurmTimeout(f"{tool} did not answer within {timeout:g} s", full) from exc
    finally:
        seconds = time.monotonic() - started
        _record(Command(tool, argv, run_as, seconds, returncode))
        logger.debug("slurm: %s -> %s in %.3fs", shlex.join(full), returncode, seconds)
    if returncode != 0:
        raise _failure(full, returncode, stdout, stderr, tool=tool)
    if stderr.strip():
        logger.debug("slurm: %s stderr: %s", tool, stderr.strip())
    return stdout


def _not_runnable(full: list[str], exc: OSError) -> SlurmMisconfigured:
    """The error for a program that is missing or not executable, logged: the deployment is broken."""
    logger.error("slurm: cannot run %s: %s", shlex.join(full), exc)
    return SlurmMisconfigured(
        f"{os.path.basename(full[0])} could not be run on the worker ({exc.strerror}; check PATH or SLURM_BIN_DIR)",
        full,
    )


def _failure(full: list[str], returncode: int, stdout: str, stderr: str, tool: str) -> SlurmError:
    """The typed error for a command that exited non-zero, logged as a warning when a retry may help."""
    error = classify(full, returncode, stderr, stdout, tool=tool)
    logger.log(
        logging.WARNING if isinstance(error, SlurmUnavailable) else logging.INFO,
        "slurm: %s failed (%s): %s",
        shlex.join(full),
        returncode,
        stderr.strip(),
    )
    return error


def _execute(argv: list[str], timeout: float, env: dict[str, str], stdin: BinaryIO | None) -> tuple[int, str, str]:
    """subprocess.run, but a timeout, or the worker cutting the command short, stops its whole process group.

    With a run-as prefix the Slurm tool is a grandchild; stopping only the direct
    child would leave it running, so the command gets its own session.
    """
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        errors="replace",  # a job name in another encoding must not break parsing
        env=env,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            try:
                proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # a grandchild we may not signal still holds the pipes
            raise
        except BaseException:
            # The worker cut the command short (the task's soft time limit, a shutdown): it goes too, or leaving
            # the `with` block would wait for it, however long it hangs.
            _kill_group(proc)
            raise
        return proc.returncode, stdout, stderr


def _kill_group(proc: subprocess.Popen) -> None:
    """Stop the command: SIGTERM first, which sudo passes on to the command it runs as the student (the worker
    may not signal that process itself), then SIGKILL to what is left of the group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=STOP_GRACE_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue
