"""Which lab cluster the tests talk to when they ask Slurm directly (not through the adapter).

The host's own cluster by default: the tools on PATH and /etc/slurm/slurm.conf. `make test-slurm24` points
both at the Slurm 24.11 cluster of scripts/slurm24: LABQUEUE_SLURM_BIN_DIR (the adapter reads the same
variable through settings), LABQUEUE_LAB_SLURM_CONF (that cluster's slurm.conf as the host sees it) and
LABQUEUE_LAB_CONTROL (the command that runs scripts/labcluster for that cluster: `scripts/slurm24 labcluster`).
Read from the environment, not from settings: tests change settings.SLURM_BIN_DIR to break the adapter on
purpose, and the helpers that check or clean up after it must still reach the lab.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def slurm_tool(name: str) -> str:
    """The command that runs the lab's Slurm tool `name` (e.g. "squeue")."""
    bin_dir = os.environ.get("LABQUEUE_SLURM_BIN_DIR", "")
    return os.path.join(bin_dir, name) if bin_dir else name


def lab_slurm_conf() -> Path:
    """The lab cluster's slurm.conf (symbolic links resolved); gres.conf is beside it."""
    return Path(os.environ.get("LABQUEUE_LAB_SLURM_CONF") or "/etc/slurm/slurm.conf").resolve()


def labcluster(*args: str) -> None:
    """Run the lab cluster's `scripts/labcluster ARGS` (e.g. "fail-node", "gpu2") for the cluster under test."""
    command = shlex.split(os.environ.get("LABQUEUE_LAB_CONTROL") or "scripts/labcluster")
    subprocess.run([*command, *args], check=True, cwd=REPO)


#: The lab is one cluster every test shares: tests run as a site without ceilings on jobs per student, GPU-hours
#: and course-wide GPUs (0), so a reconciliation in one test never leaves the shipped defaults in Slurm for the
#: tests after it. The tests of ceilings set their own (tests/security/test_instructor_policy_*), and those of
#: the shipped defaults read them from a fresh process (test_instructor_policy_default_ceilings.py).
TEST_SITE_CEILINGS = {
    "LABQUEUE_CEILING_JOBS_PER_STUDENT": "0",
    "LABQUEUE_CEILING_GPU_HOURS_PER_STUDENT": "0",
    "LABQUEUE_CEILING_GPUS_PER_COURSE": "0",
}
