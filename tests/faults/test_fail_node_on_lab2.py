"""`scripts/labcluster fail-node` on a node of the second cluster, lab2 (scripts/labcluster up-lab2): the node fails
on lab2 (its slurmd and its job's processes killed; lab2's controller ends the job NODE_FAIL) while lab's job on a
node of lab keeps running. `restore-node` brings the node back on lab2 (it fails unless the node is usable).

Job ids are per cluster, so a lab2 job may have the id of a lab job: fail-node picks a node's step daemons by the
node's own slurmd log they hold open, not by the job id alone (scripts/labcluster, step_on_node)."""

import subprocess

import pytest

from tests.behaviour_helpers import SLURM_ENV, slurm, wait_until
from tests.lab import labcluster, slurm_tool

pytestmark = pytest.mark.slurm


def sleeper(cluster: str, node: str) -> str:
    """A research job sleeping on `node` of `cluster`; its Slurm job id."""
    argv = ["runuser", "-u", "researcher1", "--", slurm_tool("sbatch"), "-M", cluster, "--parsable", "--export=NONE"]
    argv += ["--account=research", "--partition=gpu", f"--nodelist={node}", "--mem=100", "-t", "5"]
    argv += ["--job-name=lq-fail-node", "--output=/dev/null", "--wrap=sleep 300"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/tmp", env=SLURM_ENV, check=True)
    return done.stdout.strip().split(";")[0]


def state(cluster: str, job_id: str) -> str:
    live = slurm("squeue", "-M", cluster, "-h", "-j", job_id, "-o", "%T", check=False).strip()
    return live or slurm("sacct", "-M", cluster, "-X", "-n", "-P", "-j", job_id, "-o", "State").strip()


def test_fail_node_of_a_lab2_node_fails_it_on_lab2_and_leaves_labs_jobs_running():
    labcluster("up-lab2")  # quick when it already runs
    on_lab2, on_lab = sleeper("lab2", "gpu3"), sleeper("lab", "gpu1")
    try:
        wait_until(lambda: state("lab2", on_lab2) == state("lab", on_lab) == "RUNNING", timeout=60, what="both")
        labcluster("fail-node", "gpu3")
        try:
            wait_until(lambda: state("lab2", on_lab2) == "NODE_FAIL", timeout=150, what="lab2 to mark its job failed")
        finally:
            labcluster("restore-node", "gpu3")
        assert state("lab", on_lab) == "RUNNING"  # restore-node returned: gpu3 is usable on lab2 again
    finally:
        slurm("scancel", "-M", "lab2", on_lab2, check=False)
        slurm("scancel", "-M", "lab", on_lab, check=False)
