"""The Slurm job-state vocabulary, defined once: every reader of a Slurm state uses this module.

Slurm names a job's state in one word (squeue ``%T``; sacct ``State`` without its ``by <uid>``).
A state is live while the job waits (pending) or holds resources (running); every other state is
final, and :func:`final_outcome` is the one rule that turns a state into the portal's outcome.
"""

from __future__ import annotations

PENDING = "PENDING"
COMPLETED = "COMPLETED"
CANCELLED = "CANCELLED"

#: Waiting: for resources or priority, on hold, or to be started again.
PENDING_STATES = frozenset({PENDING, "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
#: Holding resources: starting, running, finishing, suspended.
RUNNING_STATES = frozenset({"CONFIGURING", "RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING", "SUSPENDED"})
#: Not finished yet: the job is still in squeue.
LIVE_STATES = PENDING_STATES | RUNNING_STATES
#: A federated job's copy on a cluster that did not run it (its origin keeps one while a sibling runs it): never
#: the job's own state; the adapter leaves these rows out of squeue's and sacct's answers.
REVOKED = "REVOKED"

#: The portal outcomes of a finished job (the same words as the portal's job statuses).
OUTCOME_COMPLETED, OUTCOME_CANCELLED, OUTCOME_FAILED = "completed", "cancelled", "failed"
#: Final states with an outcome of their own. Every other final state (FAILED, TIMEOUT, OUT_OF_MEMORY,
#: NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE, ...) is a failure.
OUTCOME_OF_STATE = {COMPLETED: OUTCOME_COMPLETED, CANCELLED: OUTCOME_CANCELLED}


def is_live(state: str) -> bool:
    return state in LIVE_STATES


def is_running(state: str) -> bool:
    return state in RUNNING_STATES


def final_outcome(state: str) -> str | None:
    """The portal outcome of a Slurm state: "completed", "cancelled" or "failed"; None while the job is live."""
    if state in LIVE_STATES:
        return None
    return OUTCOME_OF_STATE.get(state, OUTCOME_FAILED)


def states_with_outcome(outcome: str) -> frozenset[str]:
    """The final states named for `outcome` ("completed", "cancelled"); "failed" is every other final state."""
    return frozenset(state for state, named in OUTCOME_OF_STATE.items() if named == outcome)
