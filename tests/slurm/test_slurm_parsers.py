"""Parsers on output captured from the lab cluster (Slurm 22.05.8).

Captured with the adapter's own formats: fields separated by \\x1f and
SLURM_TIME_FORMAT=%s (epoch seconds).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from slurm import parsers
from slurm.errors import SlurmRejected, SlurmUnavailable, classify
from tests.slurm.helpers import captured

SQUEUE = captured("squeue.txt")
SACCT = captured("sacct.txt")
SACCT_LIVE = captured("sacct-live.txt")


def epoch(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def test_squeue_lines_become_live_jobs_keyed_by_id() -> None:
    jobs = parsers.parse_squeue(SQUEUE)

    assert len(jobs) == 10
    running = jobs["141"]
    assert (running.user, running.account, running.partition) == ("student3", "cs101", "gpu")
    assert (running.state, running.reason, running.priority) == ("RUNNING", "", 500)
    assert running.submit_time == epoch(1795980395)
    assert running.start_time == epoch(1795980396)
    assert running.nodes == "gpu2"
    assert running.name == "big student3"
    assert running.queue_position is None


def test_a_pending_job_has_a_reason_no_start_and_no_nodes() -> None:
    held = parsers.parse_squeue(SQUEUE)["12"]

    assert (held.state, held.reason, held.priority) == ("PENDING", "JobHeldUser", 0)
    assert held.start_time is None
    assert held.nodes == ""
    assert held.name == "cap|hold name"


def test_queue_position_ranks_pending_jobs_by_priority_then_submission() -> None:
    jobs = parsers.parse_squeue(SQUEUE)

    positions = {job_id: job.queue_position for job_id, job in jobs.items()}

    # 140 has the highest priority; 139 and 142 tie on priority and submit
    # time, so the older id goes first; the held job (priority 0) comes last.
    assert positions == {
        "140": 1,
        "139": 2,
        "142": 3,
        "12": 4,
        "141": None,
        "143": None,
        "133": None,
        "8": None,
        "10": None,
        "4": None,
    }


def test_queue_positions_are_counted_per_partition() -> None:
    line = "7\x1fstudent1\x1fcs101\x1fdebug\x1fPENDING\x1fPriority\x1f10\x1f1795980395\x1fN/A\x1f\x1f(null)\x1fother"

    jobs = parsers.parse_squeue(SQUEUE + line)

    assert jobs["7"].queue_position == 1
    assert jobs["140"].queue_position == 1


def test_a_job_in_a_reservation_is_ranked_among_that_reservations_jobs_only() -> None:
    def line(job_id: str, priority: str, reservation: str) -> str:
        fields = [job_id, "student1", "cs101", "gpu", "PENDING", "Reservation", priority, "1795980395", "N/A", ""]
        return "\x1f".join([*fields, reservation, "lab job"]) + "\n"

    jobs = parsers.parse_squeue(SQUEUE + line("200", "50", "lab-cs101-1") + line("201", "40", "lab-cs101-1"))

    assert (jobs["200"].reservation, jobs["200"].queue_position) == ("lab-cs101-1", 1)
    assert jobs["201"].queue_position == 2
    assert jobs["140"].queue_position == 1, "the partition's jobs outside the lab are ranked without the lab's"
    assert jobs["140"].reservation == ""


def test_finished_jobs_in_squeue_keep_their_final_state() -> None:
    jobs = parsers.parse_squeue(SQUEUE)

    assert jobs["8"].state == "COMPLETED"
    assert (jobs["10"].state, jobs["10"].reason) == ("FAILED", "JobLaunchFailure")
    assert (jobs["4"].state, jobs["4"].reason) == ("NODE_FAIL", "NodeDown")


def test_an_unreadable_squeue_line_is_skipped() -> None:
    jobs = parsers.parse_squeue("garbage without delimiters\n" + SQUEUE)

    assert len(jobs) == 10


def test_a_completed_gpu_job_has_exit_zero_and_one_gpu() -> None:
    record = parsers.parse_sacct(SACCT)["8"]

    assert (record.state, record.exit_code, record.signal) == ("COMPLETED", 0, 0)
    assert (record.user, record.account, record.partition, record.qos) == (
        "student1",
        "cs101",
        "gpu",
        "normal",
    )
    assert record.alloc_tres == {
        "billing": "1",
        "cpu": "1",
        "gres/gpu": "1",
        "mem": "1000M",
        "node": "1",
    }
    assert (record.gpus, record.cpus, record.mem_mb, record.billing) == (1, 1, 1000, 1)
    assert record.submit == record.start == record.end == epoch(1795980194)
    assert record.name == "cap|ok name"
    assert record.comment == "cmt|ok"
    assert record.node_list == "gpu1"
    assert record.reason == ""
    assert record.reservation == ""
    assert record.cancelled_by == ""


def test_a_failing_script_is_failed_with_exit_code_three() -> None:
    record = parsers.parse_sacct(SACCT)["9"]

    assert (record.state, record.exit_code, record.signal) == ("FAILED", 3, 0)
    assert record.gpus == 0


def test_a_job_killed_by_sigkill_has_signal_nine() -> None:
    record = parsers.parse_sacct(SACCT)["10"]

    assert (record.state, record.exit_code, record.signal) == ("FAILED", 0, 9)
    assert record.elapsed_seconds == 1


def test_a_job_over_its_time_limit_is_timeout() -> None:
    record = parsers.parse_sacct(SACCT)["11"]

    assert (record.state, record.exit_code, record.signal) == ("TIMEOUT", 0, 0)
    assert record.elapsed_seconds == 87
    assert record.end == epoch(1795980281)
    assert record.comment == "cmt|to"


def test_cancelled_by_names_the_uid_that_cancelled() -> None:
    record = parsers.parse_sacct(SACCT)["23"]

    assert (record.state, record.cancelled_by) == ("CANCELLED", "1001")
    assert record.reason == "JobHeldUser"
    assert record.node_list == ""
    assert record.alloc_tres == {} and record.gpus == 0


def test_a_pending_job_has_no_start_or_end() -> None:
    record = parsers.parse_sacct(SACCT_LIVE)["12"]

    assert record.state == "PENDING"
    assert record.submit == epoch(1795980194)
    assert record.start is None and record.end is None


def test_a_running_job_has_no_end_yet() -> None:
    record = parsers.parse_sacct(SACCT_LIVE)["11"]

    assert record.state == "RUNNING"
    assert record.end is None
    assert record.comment == ""  # 22.05 stores the comment only when the job ends


def test_a_placeholder_row_from_slurmdbd_is_provisional() -> None:
    placeholder = parsers.parse_sacct(SACCT_LIVE)["259"]
    settled = parsers.parse_sacct(SACCT)["259"]

    assert placeholder.provisional and not settled.provisional
    assert (placeholder.name, placeholder.partition, placeholder.qos) == ("allocation", "", "Unknown")
    assert (settled.name, settled.partition, settled.qos) == ("quick 2", "gpu", "normal")
    assert (placeholder.state, placeholder.exit_code, placeholder.end) == (settled.state, 0, settled.end)


def test_gpu_seconds_come_from_alloc_tres_and_elapsed() -> None:
    record = parsers.parse_sacct(SACCT)["4"]

    assert (record.state, record.gpus, record.elapsed_seconds) == ("NODE_FAIL", 4, 43)
    assert record.gpu_seconds == 172


def test_free_text_fields_may_hold_pipes_and_the_comment_takes_any_extra() -> None:
    line = "5\x1fu\x1fa\x1fp\x1fnormal\x1f\x1fCOMPLETED\x1f0:0\x1fNone\x1f1\x1f1\x1f1\x1f0\x1f\x1fn\x1fname|x\x1fc\x1fd"

    record = parsers.parse_sacct(line)["5"]

    assert (record.name, record.comment) == ("name|x", "c\x1fd")


@pytest.mark.parametrize(
    ("tres", "gpus"),
    [
        ("billing=1,cpu=1,gres/gpu=2,mem=1000M,node=1", 2),
        # With AccountingStorageTRES=gres/gpu,gres/gpu:a100 both keys are present:
        # the untyped total counts, the typed one is not added on top.
        ("billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=2000M,node=1", 2),
        ("cpu=1,gres/gpu:a100=1,gres/gpu:v100=2,node=1", 3),
        ("billing=1,cpu=1,mem=1000M,node=1", 0),
        ("", 0),
    ],
)
def test_gpus_prefer_the_untyped_gres_total(tres: str, gpus: int) -> None:
    assert parsers.tres_gpus(parsers.parse_tres(tres)) == gpus


@pytest.mark.parametrize(
    ("text", "mb"),
    [("1000M", 1000), ("4G", 4096), ("1.50G", 1536), ("512K", 0), ("1T", 1048576), ("", 0)],
)
def test_memory_is_read_in_megabytes(text: str, mb: int) -> None:
    assert parsers.parse_mem_mb(text) == mb


@pytest.mark.parametrize("value", ["", "N/A", "Unknown", "None", "0", "  "])
def test_missing_times_are_none(value: str) -> None:
    assert parsers.parse_time(value) is None


def test_epoch_times_are_aware_utc() -> None:
    moment = parsers.parse_time("1795980194")

    assert moment == datetime(2026, 11, 29, 19, 23, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    ("stdout", "job_id"),
    [("8\n", "8"), ("1234;lab\n", "1234"), ("sbatch: warning: x\n77\n", "77")],
)
def test_sbatch_parsable_output_gives_the_job_id(stdout: str, job_id: str) -> None:
    assert parsers.parse_sbatch(stdout) == job_id


def test_sbatch_output_without_a_job_id_is_an_error() -> None:
    with pytest.raises(parsers.ParseError):
        parsers.parse_sbatch("Submitted batch job\n")


def test_the_newest_job_id_is_the_highest() -> None:
    assert parsers.newest_job_id(["9", "139", "23", "139_2", "139_10"]) == "139_10"
    assert parsers.newest_job_id([]) is None


# stderr captured from sbatch/squeue/sacct/scancel on the lab cluster.
REJECTIONS = [
    (
        "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n",
        "Batch job submission failed: Invalid account or account/partition combination specified",
    ),
    (
        "sbatch: error: invalid partition specified: nopart\n"
        "sbatch: error: Batch job submission failed: Invalid partition name specified\n",
        "Batch job submission failed: Invalid partition name specified",
    ),
    (
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
        "Batch job submission failed: Requested node configuration is not available",
    ),
    (
        "sbatch: error: Batch job submission failed: Invalid qos specification\n",
        "Batch job submission failed: Invalid qos specification",
    ),
    (
        "sbatch: error: Batch job submission failed: Requested reservation is invalid\n",
        "Batch job submission failed: Requested reservation is invalid",
    ),
    (
        "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)\n",
        "Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)",
    ),
    (
        "scancel: error: Kill job error on job id 12: Access/permission denied\n",
        "Kill job error on job id 12: Access/permission denied",
    ),
]


@pytest.mark.parametrize(("stderr", "message"), REJECTIONS)
def test_definite_refusals_are_rejected_with_slurms_message(stderr: str, message: str) -> None:
    error = classify(["runuser", "-u", "student1", "--", "sbatch"], 1, stderr)

    assert isinstance(error, SlurmRejected)
    assert error.message == message
    assert str(error) == message


UNAVAILABLE = [
    "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
    "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n",
    "sacct: error: slurm_persist_conn_open_without_init: failed to open persistent "
    "connection to host:localhost:1: Connection refused\n"
    "sacct: error: Sending PersistInit msg: Connection refused\n"
    "sacct: error: Problem talking to the database: Connection refused\n",
    "squeue: error: Socket timed out on send/recv operation\n",
    "sbatch: error: Slurm backup controller in standby mode\n",
    "sbatch: error: Zero Bytes were transmitted or received\n",
]


@pytest.mark.parametrize("stderr", UNAVAILABLE)
def test_no_answer_from_slurm_is_unavailable(stderr: str) -> None:
    error = classify(["squeue"], 1, stderr)

    assert isinstance(error, SlurmUnavailable)


def test_a_submission_that_could_not_reach_the_controller_is_not_rejected() -> None:
    error = classify(["sbatch"], 1, UNAVAILABLE[1])

    assert isinstance(error, SlurmUnavailable)
    assert error.message.startswith("Batch job submission failed: Unable to contact")


@pytest.mark.parametrize(
    ("returncode", "stderr"),
    [
        (127, "runuser: failed to execute sbatch: No such file or directory\n"),
        (1, "sudo: a password is required\n"),
        (1, "sudo: sbatch: command not found\n"),
    ],
)
def test_a_worker_that_cannot_run_slurm_is_unavailable_not_rejected(returncode: int, stderr: str) -> None:
    error = classify(["sudo", "-n", "-u", "student1", "sbatch"], returncode, stderr)

    assert isinstance(error, SlurmUnavailable)
    assert "could not be run on the worker" in error.message


def test_a_job_name_with_a_form_feed_does_not_split_the_line() -> None:
    line = SQUEUE.splitlines()[0].replace("big student3", "big\x0cstudent3")

    assert parsers.parse_squeue(line)["141"].name == "big\x0cstudent3"
