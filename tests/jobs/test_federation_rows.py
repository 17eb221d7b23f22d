"""Which member's row a federated job is followed by when more than one member's squeue lists it
(jobs.dispatch.federation_rows): a running row first, wherever it is, else the first member's. The lab cannot
hold a job in that moment on purpose (the origin's copy is revoked within a second of the start on a sibling),
so the rule is shown on the rows; tests/jobs/test_federated_course.py follows real federated jobs through it."""

from jobs.dispatch import federation_rows
from slurm.records import LiveJob

JOB = "67108888"  # lab's (cluster id 1) federation-wide id for its local job 24


def row(state: str, nodes: str = "") -> LiveJob:
    return LiveJob(
        job_id=JOB,
        name="lq-hello",
        user="student1",
        account="cs102",
        partition="gpu",
        state=state,
        reason="Resources" if state == "PENDING" else "None",
        priority=1000,
        submit_time=None,
        start_time=None,
        nodes=nodes,
    )


def test_a_job_running_on_the_second_member_while_still_waiting_on_the_first_is_followed_where_it_runs(settings):
    settings.LABQUEUE_SLURM_CLUSTER = "lab"
    queues = {"": {JOB: row("PENDING")}, "lab2": {JOB: row("RUNNING", "gpu3")}}

    live, ran_on = federation_rows(queues, ["", "lab2"])

    assert (live[JOB].state, live[JOB].nodes, ran_on[JOB]) == ("RUNNING", "gpu3", "lab2")


def test_a_job_running_on_the_first_member_keeps_that_row_over_a_waiting_copy_on_the_second(settings):
    settings.LABQUEUE_SLURM_CLUSTER = "lab"
    queues = {"": {JOB: row("RUNNING", "gpu1")}, "lab2": {JOB: row("PENDING")}}

    live, ran_on = federation_rows(queues, ["", "lab2"])

    assert (live[JOB].state, live[JOB].nodes, ran_on[JOB]) == ("RUNNING", "gpu1", "lab")


def test_a_job_waiting_on_every_member_is_followed_by_the_first_members_row(settings):
    settings.LABQUEUE_SLURM_CLUSTER = "lab"
    queues = {"": {JOB: row("PENDING")}, "lab2": {}}

    assert federation_rows(queues, ["", "lab2"]) == ({JOB: row("PENDING")}, {JOB: "lab"})
    assert federation_rows({"": {}, "lab2": {}}, ["", "lab2"]) == ({}, {})
