"""Typed Slurm errors and the rules that sort a failed command into them.

``SlurmUnavailable`` means "the answer is unknown, try again later": the
controller or slurmdbd did not answer, the command timed out, or the worker is
misconfigured (a Slurm binary or the run-as helper is missing). A missing binary
is a deployment fault, not the student's: it must never mark a job as rejected,
so it is classed as unavailable (and logged at ERROR by the runner) and the
caller's retry/backoff keeps the job in its last known state until an operator
fixes the worker.

``SlurmRejected`` means Slurm (or the run-as helper) gave a definite "no" that a
retry cannot change: an invalid account, partition, gres or QOS, a policy
violation, an unknown job id. Its ``message`` is Slurm's own text without the
``sbatch: error:`` prefix, fit to show to the student.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence


class SlurmError(Exception):
    """A Slurm command failed. ``str()`` is the user-readable ``message``."""

    def __init__(self, message: str, argv: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.argv = list(argv)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, argv={self.argv!r})"


class SlurmUnavailable(SlurmError):
    """Transient: Slurm did not answer (or the worker cannot reach it). Retry."""


class SlurmMisconfigured(SlurmUnavailable):
    """The worker cannot run the command at all (a program missing, sudo refusing): an operator must fix the
    deployment. Transient as far as the job is concerned: nothing was sent."""


class SlurmTimeout(SlurmUnavailable):
    """The command did not finish within its timeout and was killed: what it did meanwhile is unknown."""


class SlurmRejected(SlurmError):
    """Permanent: Slurm refused the request. Retrying cannot help."""


# Lower-cased fragments of messages that mean "no answer", not "no".
TRANSIENT_MARKERS = (
    "unable to contact slurm controller",
    "slurm controller not responding",
    "socket timed out",
    "backup controller in standby",
    "zero bytes were transmitted",
    "problem talking to the database",
    "slurm_persist_conn_open",
    "slurmdbd: getting db_index",
    "connection refused",
    "connection reset by peer",
    "communication connection failure",
    "transport endpoint is not connected",
    "temporarily unable",
    "resource temporarily unavailable",
    "unable to establish controller",
    "munge",
    # -M <cluster> while that cluster's slurmctld is down (slurmdbd drops its registration). A name slurmdbd
    # never knew says the same: doctor checks the configured names (LABQUEUE_SLURM_OTHER_CLUSTERS).
    "can't be reached now",
)

# The worker cannot run the tool at all: an operator has to fix the deployment.
MISCONFIG_MARKERS = (
    "command not found",
    "failed to execute",
    "a password is required",
    "a terminal is required",
)

_PREFIX = re.compile(r"^(?P<tool>[\w.-]+): (?:error|fatal): ", re.IGNORECASE)


def clean_message(tool: str, text: str) -> str:
    """Slurm's own words from stderr, minus the ``<tool>: error:`` prefixes.

    When sbatch prints several error lines, the "Batch job submission failed: ..."
    line is the one that explains the refusal; otherwise the error lines are joined.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [_PREFIX.sub("", line) for line in lines if _PREFIX.match(line)]
    candidates = errors or lines
    for line in reversed(candidates):
        if "submission failed" in line.lower():
            return line
    return "; ".join(dict.fromkeys(candidates))  # de-duplicated, order kept


def classify(argv: Sequence[str], returncode: int, stderr: str, stdout: str = "", tool: str = "") -> SlurmError:
    """Turn a non-zero exit into SlurmUnavailable or SlurmRejected. `tool` names the Slurm command in the message
    when argv starts with something else (the run-as prefix, the job-directory helper)."""
    tool = tool or (os.path.basename(argv[0]) if argv else "slurm")
    text = stderr.strip() or stdout.strip()
    message = clean_message(tool, text) or f"{tool} exited with status {returncode}"
    lowered = text.lower()
    if returncode in (126, 127) or any(marker in lowered for marker in MISCONFIG_MARKERS):
        return SlurmMisconfigured(f"{tool} could not be run on the worker: {message}", argv)
    if returncode < 0 or any(marker in lowered for marker in TRANSIENT_MARKERS):
        return SlurmUnavailable(message, argv)
    return SlurmRejected(message, argv)
