"""Two lab clusters sharing one slurmdbd, and their federation, through Slurm's own tools.

scripts/labcluster runs a second cluster `lab2` (nodes gpu3, gpu4) beside `lab` (README, "The lab cluster"):
these tests prove what the portal will build on. Clients need no configuration for lab2 (`-M lab2` finds its
controller through slurmdbd), job ids are per cluster, a stopped lab2 leaves lab working, and in the federation
`labfed` a job that cannot start on lab starts on lab2. The tests bring lab2 up if it is not running (and stop it
again after), turn the federation on only while they need it, and cancel every job they submitted.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.lab import labcluster, slurm_tool

from .helpers import COURSE_ACCOUNT, STUDENT, wait_for

pytestmark = pytest.mark.slurm

LAB2_NODES = {"gpu3", "gpu4"}
FEDERATED_ID_BASE = 1 << 26  # a federation's job ids: cluster id << 26 + the origin's own id


def tool(name: str, *args: str, user: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the lab's Slurm tool `name`, as root or (sudo) as `user`; never raises on a non-zero exit."""
    prefix = ["sudo", "-n", "-u", user] if user else []
    return subprocess.run([*prefix, slurm_tool(name), *args], capture_output=True, text=True, timeout=60)


def queue_rows() -> tuple[int, set[tuple[str, str, str, str]]]:
    """`squeue -M all` as (exit status, {(cluster, job id, state, nodes)})."""
    result = tool("squeue", "-M", "all", "-h", "-O", "Cluster:|,JobID:|,State:|,NodeList:|")
    rows = {tuple(line.split("|")[:4]) for line in result.stdout.splitlines() if line.count("|") >= 4}
    return result.returncode, rows  # type: ignore[return-value]


def lab2_answers() -> bool:
    return tool("squeue", "-M", "lab2", "-h").returncode == 0


@pytest.fixture(scope="module")
def lab2() -> Iterator[None]:
    """lab2 running for these tests; stopped again after them when they started it."""
    was_running = lab2_answers()
    if not was_running:
        labcluster("up-lab2")
    yield
    if not was_running:
        labcluster("down-lab2")


@pytest.fixture
def submitted() -> Iterator[list[tuple[str, str]]]:
    """(cluster, job id) of the jobs a test submitted: cancelled at its end."""
    jobs: list[tuple[str, str]] = []
    yield jobs
    for cluster, job_id in jobs:
        tool("scancel", "-M", cluster, job_id)


@pytest.fixture
def federation(lab2: None) -> Iterator[None]:
    """The federation labfed of lab and lab2, on for one test and always off after it."""
    labcluster("federation-on")
    try:
        yield
    finally:
        labcluster("federation-off")


def submit(
    submitted: list[tuple[str, str]], *args: str, cluster: str = "", user: str | None = STUDENT
) -> tuple[str, str]:
    """sbatch --parsable ARGS (to `cluster` with -M when given) as `user` (None: root, account root).

    Returns (job id, the cluster sbatch named after it: "lab2" for "12;lab2", "" without -M).
    """
    where = ["-M", cluster] if cluster else []
    account = COURSE_ACCOUNT if user else "root"
    options = ["--parsable", "-A", account, "-t", "5", "--chdir=/tmp", "-o", "/dev/null"]
    result = tool("sbatch", *where, *options, *args, user=user)
    assert result.returncode == 0, result.stderr
    job_id, _, printed_cluster = result.stdout.strip().partition(";")
    submitted.append((cluster or "lab", job_id))
    return job_id, printed_cluster


def running_on(cluster: str, job_id: str) -> str:
    """The job's nodes once `squeue -M all` lists it RUNNING on `cluster`, else ""."""
    _, rows = queue_rows()
    return next((nodes for c, j, state, nodes in rows if (c, j, state) == (cluster, job_id, "RUNNING")), "")


def test_a_job_sent_to_lab2_runs_on_its_nodes_and_squeue_of_all_clusters_names_its_cluster(
    lab2: None, submitted: list[tuple[str, str]]
) -> None:
    job_id, printed_cluster = submit(submitted, "--gres=gpu:1", "--wrap", "sleep 300", cluster="lab2")

    assert printed_cluster == "lab2"
    assert wait_for(lambda: running_on("lab2", job_id)) in LAB2_NODES


def lab_job_ids() -> set[int]:
    """The ids of every job lab's accounting holds (lab's own numbering, not a federation's)."""
    result = tool("sacct", "-M", "lab", "-a", "-X", "-n", "-P", "-o", "JobIDRaw", "-S", "2020-01-01", "-E", "now")
    return {int(line) for line in result.stdout.split() if line.isdigit() and int(line) < FEDERATED_ID_BASE}


def an_id_both_clusters_use(submitted: list[tuple[str, str]]) -> str:
    """The id of a held job on lab2 named lq-two-clusters for which lab has a job of its own.

    lab has usually run far more jobs, so lab2's next id is one lab used long ago. Where lab skipped it (a
    federation's jobs take lab's ids) lab2 submits again; where lab2 is ahead, held jobs on lab catch up.
    """
    lab_ids = lab_job_ids()

    def next_id(cluster: str, name: str) -> int:
        return int(submit(submitted, "--hold", "-J", name, "--wrap", "true", cluster=cluster)[0])

    job_id = next_id("lab2", "lq-two-clusters")
    for _ in range(1000):
        if job_id in lab_ids:
            return str(job_id)
        if job_id > max(lab_ids, default=0):
            lab_ids.add(next_id("lab", "lq-catch-up"))
        else:
            job_id = next_id("lab2", "lq-two-clusters")
    raise AssertionError(f"lab2's job ids never met one of lab's (lab2 at {job_id}, lab at {max(lab_ids)})")


def test_the_same_job_id_on_both_clusters_is_two_jobs_in_accounting(
    lab2: None, submitted: list[tuple[str, str]]
) -> None:
    job_id = an_id_both_clusters_use(submitted)

    def records() -> dict[str, set[str]]:
        result = tool("sacct", "-M", "lab,lab2", "-j", job_id, "-X", "-n", "-P", "-o", "Cluster,JobID,JobName")
        names: dict[str, set[str]] = {}
        for line in result.stdout.splitlines():
            cluster, accounted_id, name = line.split("|")
            assert accounted_id == job_id
            names.setdefault(cluster, set()).add(name)
        return names if names.get("lab2") == {"lq-two-clusters"} else {}

    names = wait_for(records)

    assert set(names) == {"lab", "lab2"}
    assert "lq-two-clusters" not in names["lab"]


def test_sacct_of_lab2_finds_the_job_and_scancel_of_lab2_ends_it(lab2: None, submitted: list[tuple[str, str]]) -> None:
    job_id, _ = submit(submitted, "--gres=gpu:1", "--wrap", "sleep 300", cluster="lab2")
    wait_for(lambda: running_on("lab2", job_id))

    cancelled = tool("scancel", "-M", "lab2", job_id, user=STUDENT)

    assert cancelled.returncode == 0, cancelled.stderr

    def accounted() -> str:
        result = tool("sacct", "-M", "lab2", "-j", job_id, "-X", "-n", "-P", "-o", "Cluster,JobID,State,NodeList")
        line = result.stdout.strip()
        return line if "CANCELLED" in line else ""

    cluster, accounted_id, state, nodes = wait_for(accounted).split("|")
    assert (cluster, accounted_id, nodes in LAB2_NODES) == ("lab2", job_id, True)
    assert state.startswith("CANCELLED")


def test_with_lab2s_controller_stopped_lab_keeps_working_and_only_lab2_goes_missing(
    lab2: None, submitted: list[tuple[str, str]]
) -> None:
    on_lab2, _ = submit(submitted, "--wrap", "sleep 300", cluster="lab2")
    wait_for(lambda: running_on("lab2", on_lab2))

    labcluster("lab2-ctld", "stop")
    try:
        on_lab, _ = submit(submitted, "--wrap", "sleep 300", cluster="lab")
        nodes_on_lab = wait_for(lambda: running_on("lab", on_lab))
        status, rows = queue_rows()
        lab2_alone = tool("squeue", "-M", "lab2", "-h")
    finally:
        labcluster("lab2-ctld", "start")

    assert nodes_on_lab in {"gpu1", "gpu2"}
    # No lab2 rows and no error: a missing cluster in the answer means "unknown", not "no jobs"
    assert status == 0
    assert {row[0] for row in rows} == {"lab"}
    assert lab2_alone.returncode != 0
    assert "can't be reached" in lab2_alone.stderr
    # back: lab2's job was running all along
    assert wait_for(lambda: running_on("lab2", on_lab2)) in LAB2_NODES


def test_in_the_federation_a_job_that_cannot_start_on_lab_starts_on_lab2(
    lab2: None, submitted: list[tuple[str, str]], request: pytest.FixtureRequest
) -> None:
    # lab's 8 GPUs taken by root's jobs, sent before the federation exists (ordinary ids)
    for node in ("gpu1", "gpu2"):
        filler, _ = submit(submitted, "-w", node, "--gres=gpu:4", "--wrap", "sleep 600", cluster="lab", user=None)
        wait_for(lambda filler=filler: running_on("lab", filler))
    request.getfixturevalue("federation")

    job_id, _ = submit(submitted, "--gres=gpu:1", "--wrap", "sleep 300")
    try:
        assert int(job_id) >= FEDERATED_ID_BASE
        assert wait_for(lambda: running_on("lab2", job_id)) in LAB2_NODES
        _, rows = queue_rows()
        # lab, the origin, keeps at most a REVOKED copy on no node (22.05 lists it, 24.11 does not)
        assert {state for cluster, row_id, state, _ in rows if (cluster, row_id) == ("lab", job_id)} <= {"REVOKED"}
    finally:
        # on the origin, while the federation lasts: cancels the sibling on lab2 too
        cancelled = tool("scancel", job_id, user=STUDENT)
    assert cancelled.returncode == 0, cancelled.stderr
    wait_for(lambda: not running_on("lab2", job_id))


def federation_of_lab() -> str:
    """The federation slurmdbd lists lab in ("" when none)."""
    return tool("sacctmgr", "-n", "-P", "show", "cluster", "lab", "format=federation").stdout.strip()


def test_up_takes_lab_out_of_a_federation_left_on_while_lab2_is_not_running(
    lab2: None, submitted: list[tuple[str, str]]
) -> None:
    # A run stopped half-way leaves the federation on; with lab2's controller gone, lab's new jobs would wait on it
    labcluster("federation-on")
    labcluster("lab2-ctld", "stop")
    try:
        labcluster("up")
        left_in = federation_of_lab()
        job_id, _ = submit(submitted, "--gres=gpu:1", "--wrap", "sleep 300", cluster="lab")
        nodes = wait_for(lambda: running_on("lab", job_id))
    finally:
        labcluster("lab2-ctld", "start")
        labcluster("federation-off")

    assert left_in == ""
    assert int(job_id) < FEDERATED_ID_BASE  # lab's own job ids again
    assert nodes in {"gpu1", "gpu2"}
