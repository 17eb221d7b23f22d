"""The Slurm state vocabulary (slurm.states): live, pending, running, final, and each state's portal outcome.

Checked on states from captured squeue and sacct output, so a state the lab cluster really prints
cannot be left out of the vocabulary unnoticed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm import parsers, states

CAPTURED = Path(__file__).parent / "captured"


def captured(name: str) -> str:
    lines = (CAPTURED / name).read_text().splitlines(keepends=True)
    return "".join(line.replace("^_", "\x1f") for line in lines if not line.startswith("#"))


@pytest.mark.parametrize(
    ("state", "outcome"),
    [
        ("COMPLETED", "completed"),
        ("CANCELLED", "cancelled"),
        ("FAILED", "failed"),
        ("TIMEOUT", "failed"),
        ("OUT_OF_MEMORY", "failed"),
        ("NODE_FAIL", "failed"),
        ("PREEMPTED", "failed"),
        ("BOOT_FAIL", "failed"),
        ("DEADLINE", "failed"),
    ],
)
def test_every_final_state_has_one_portal_outcome(state: str, outcome: str) -> None:
    assert states.final_outcome(state) == outcome
    assert not states.is_live(state)


@pytest.mark.parametrize("state", ["PENDING", "REQUEUED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "RUNNING", "SUSPENDED"])
def test_a_live_state_has_no_outcome_yet(state: str) -> None:
    assert states.is_live(state)
    assert states.final_outcome(state) is None


def test_running_means_holding_resources_and_pending_is_not_running() -> None:
    for state in ("CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"):
        assert states.is_running(state), state
    for state in ("PENDING", "REQUEUED", "COMPLETED", "FAILED", ""):
        assert not states.is_running(state), state


def test_the_states_named_for_an_outcome_are_exactly_its_own() -> None:
    assert states.states_with_outcome("completed") == {"COMPLETED"}
    assert states.states_with_outcome("cancelled") == {"CANCELLED"}
    assert states.states_with_outcome("failed") == frozenset(), "failed is every other final state, not a list"


def test_captured_accounting_states_map_to_the_outcomes_the_cluster_meant() -> None:
    records = parsers.parse_sacct(captured("sacct.txt"))

    outcomes = {job_id: states.final_outcome(record.state) for job_id, record in records.items()}

    assert outcomes["8"] == "completed"  # exit 0
    assert outcomes["9"] == "failed"  # exit 3
    assert outcomes["10"] == "failed"  # kill -9
    assert outcomes["11"] == "failed"  # TIMEOUT
    assert outcomes["23"] == "cancelled"  # "CANCELLED by 1001"
    assert outcomes["4"] == "failed"  # NODE_FAIL


def test_captured_queue_states_are_live_exactly_while_the_job_waits_or_runs() -> None:
    jobs = parsers.parse_squeue(captured("squeue.txt"))

    live = {job_id for job_id, job in jobs.items() if states.is_live(job.state)}
    running = {job_id for job_id, job in jobs.items() if states.is_running(job.state)}

    assert live == {"141", "143", "140", "142", "139", "12"}
    assert running == {"141", "143"}
    assert {job_id for job_id, job in jobs.items() if job.is_pending} == live - running
