"""The adapter against the real lab cluster (scripts/labcluster up)."""

from __future__ import annotations

import logging
import os
import pwd
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import slurm
from slurm import accounts, reservations, runner
from tests.conftest import cancel_jobs_under
from tests.lab import lab_slurm_conf

from .helpers import COURSE_ACCOUNT, STUDENT, TEST_ROOT, JobDir, give_to_student, wait_for, wait_for_final

# early_job is submitted first so that it has left squeue by the time the last test runs.
pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("cluster", "early_job")]


@pytest.fixture(scope="session")
def submitted(cluster: None) -> Iterator[list[str]]:
    """Job ids the tests submitted; whatever is left is cancelled at the end."""
    ids: list[str] = []
    yield ids
    if ids:
        try:
            runner.run(["scancel", *ids])  # as root: any job, finished ones ignored
        except slurm.SlurmError:
            pass


@contextmanager
def _student_dir(submitted: list[str]) -> Iterator[JobDir]:
    TEST_ROOT.mkdir(parents=True, exist_ok=True)
    TEST_ROOT.chmod(0o755)
    give_to_student(TEST_ROOT)
    path = TEST_ROOT / uuid.uuid4().hex[:12]
    path.mkdir()
    give_to_student(path)
    try:
        yield JobDir(path, submitted)
    finally:
        cancel_jobs_under(path)  # the test's own jobs, at its end: held ones would otherwise wait forever
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def job_dir(submitted: list[str]) -> Iterator[JobDir]:
    """A fresh directory owned by the student, removed after the test."""
    with _student_dir(submitted) as directory:
        yield directory


@pytest.fixture(scope="module")
def early_job(submitted: list[str]) -> Iterator[tuple[str, str]]:
    """(job id, job name) of a quick job submitted when the module starts.

    For tests that need a job that has already left squeue (MinJobAge): it ages
    while the other tests run.
    """
    with _student_dir(submitted) as directory:
        spec = directory.spec(directory.script("true"))
        yield directory.submit(spec), spec.job_name


def test_a_submitted_job_runs_as_the_student_with_its_gpu(job_dir: JobDir) -> None:
    script = job_dir.script(
        'echo "user=$(whoami)"; echo "gpus=$CUDA_VISIBLE_DEVICES"; echo "pwd=$(pwd)"',
        "--gres=gpu:1",
    )
    spec = job_dir.spec(script, partition="gpu", comment="portal job test")

    job_id = job_dir.submit(spec)
    record = wait_for_final(job_id)

    assert re.fullmatch(r"\d+", job_id)
    assert record.state == "COMPLETED"
    assert (record.exit_code, record.signal) == (0, 0)
    assert (record.user, record.account, record.partition) == (STUDENT, "cs101", "gpu")
    assert record.name == spec.job_name
    assert record.comment == "portal job test"
    assert record.gpus == 1
    assert record.alloc_tres["gres/gpu"] == "1"
    assert record.submit <= record.start <= record.end
    output = job_dir.read("out.txt")
    assert f"user={STUDENT}\n" in output
    assert re.search(r"^gpus=\d+$", output, re.MULTILINE)
    assert f"pwd={job_dir.path}\n" in output


def test_an_unknown_account_is_rejected_with_slurms_own_message(job_dir: JobDir) -> None:
    spec = job_dir.spec(job_dir.script("true"), account="nosuchacct")

    with pytest.raises(slurm.SlurmRejected) as caught:
        slurm.submit(spec)

    assert caught.value.message == (
        "Batch job submission failed: Invalid account or account/partition combination specified"
    )
    assert "sbatch" in map(os.path.basename, caught.value.argv)


def test_a_held_job_is_pending_in_the_queue_with_a_reason(job_dir: JobDir) -> None:
    spec = job_dir.spec(job_dir.script("true", "--hold"))
    job_id = job_dir.submit(spec)

    with runner.command_log() as commands:
        jobs = slurm.queue()

    assert [command.tool for command in commands] == ["squeue"]
    job = jobs[job_id]
    assert job.state == "PENDING"
    assert job.reason == "JobHeldUser"
    assert (job.name, job.user, job.account, job.partition) == (
        spec.job_name,
        STUDENT,
        "cs101",
        "gpu",
    )
    assert job.queue_position is not None and job.queue_position >= 1
    assert job.submit_time is not None and job.submit_time.tzinfo is not None
    assert job.nodes == ""


def test_a_failing_script_is_failed_with_its_exit_code(job_dir: JobDir) -> None:
    job_id = job_dir.submit(job_dir.spec(job_dir.script("echo oops >&2; exit 3")))

    record = wait_for_final(job_id)

    assert record.state == "FAILED"
    assert (record.exit_code, record.signal) == (3, 0)
    assert job_dir.read("err.txt") == "oops\n"


def test_cancelling_a_pending_job_shows_who_cancelled_it(job_dir: JobDir) -> None:
    job_id = job_dir.submit(job_dir.spec(job_dir.script("true", "--hold")))

    slurm.cancel(job_id, run_as=STUDENT)
    record = wait_for_final(job_id)

    assert record.state == "CANCELLED"
    assert record.cancelled_by == str(pwd.getpwnam(STUDENT).pw_uid)
    assert record.start is None or record.start == record.end


def test_cancelling_twice_is_harmless(job_dir: JobDir) -> None:
    job_id = job_dir.submit(job_dir.spec(job_dir.script("true", "--hold")))
    slurm.cancel(job_id, run_as=STUDENT)
    wait_for_final(job_id)

    slurm.cancel(job_id, run_as=STUDENT)

    assert slurm.accounting(job_ids=[job_id])[job_id].state == "CANCELLED"


def test_cancelling_someone_elses_job_is_rejected(job_dir: JobDir) -> None:
    job_id = job_dir.submit(job_dir.spec(job_dir.script("true", "--hold")))

    with pytest.raises(slurm.SlurmRejected) as caught:
        slurm.cancel(job_id, run_as="student2")

    assert "denied" in caught.value.message.lower()


def test_find_by_name_finds_a_queued_job_with_one_squeue(job_dir: JobDir) -> None:
    spec = job_dir.spec(job_dir.script("true", "--hold"))
    job_id = job_dir.submit(spec)

    with runner.command_log() as commands:
        found = slurm.find_by_name(spec.job_name)

    assert found == job_id
    assert [command.tool for command in commands] == ["squeue"]


def test_find_by_name_of_an_unknown_name_asks_squeue_then_sacct() -> None:
    with runner.command_log() as commands:
        found = slurm.find_by_name("lq-test-never-submitted")

    assert found is None
    assert [command.tool for command in commands] == ["squeue", "sacct"]


def test_a_sync_cycle_costs_one_squeue_and_one_sacct(job_dir: JobDir) -> None:
    ids = [job_dir.submit(job_dir.spec(job_dir.script("true", "--hold"))) for _ in range(3)]
    wait_for(lambda: set(slurm.accounting(job_ids=ids)) == set(ids))  # slurmdbd lags a little
    before = runner.command_counts.copy()

    live = slurm.queue()
    records = slurm.accounting(job_ids=ids)

    assert set(ids) <= set(live)
    assert set(records) == set(ids)
    assert runner.command_counts - before == {"squeue": 1, "sacct": 1}


def test_accounting_by_time_window_and_account_finds_recent_jobs(job_dir: JobDir) -> None:
    job_id = job_dir.submit(job_dir.spec(job_dir.script("true")))
    record = wait_for_final(job_id)
    since, until = record.submit - timedelta(minutes=1), record.end + timedelta(minutes=1)

    found = slurm.accounting(since=since, until=until, accounts=["cs101"])
    elsewhere = slurm.accounting(since=since, until=until, accounts=["research"])
    before = slurm.accounting(since=since - timedelta(hours=1), until=since)

    assert found[job_id] == record
    assert job_id not in elsewhere
    assert job_id not in before


@pytest.mark.usefixtures("worker_behind_utc")
def test_a_worker_behind_utc_finds_the_same_jobs_by_time_window(job_dir: JobDir) -> None:
    # sacct reads -S and -E in UTC (the adapter runs it with TZ=UTC); times in the worker's zone would miss the job.
    job_id = job_dir.submit(job_dir.spec(job_dir.script("true")))
    record = wait_for_final(job_id)
    here = datetime.now().astimezone().tzinfo
    since, until = record.submit - timedelta(minutes=1), record.end + timedelta(minutes=1)

    found = slurm.accounting(since=since.astimezone(here), until=until.astimezone(here))

    assert found[job_id] == record


def test_clearing_the_reservation_of_a_job_that_already_ended_is_logged_not_raised(
    job_dir: JobDir, caplog: pytest.LogCaptureFixture
) -> None:
    # A lab's end moves its waiting jobs out of the reservation; one may finish just before the move reaches it.
    job_id = job_dir.submit(job_dir.spec(job_dir.script("true")))
    wait_for_final(job_id)

    with caplog.at_level(logging.INFO, logger="slurm.reservations"):
        reservations.job_reservation_clear(job_id)

    (message,) = [record.getMessage() for record in caplog.records if record.name == "slurm.reservations"]
    assert re.fullmatch(
        rf"slurm: could not clear the reservation of job {job_id}: "
        rf"(Job has already finished|Invalid job id specified) for job {job_id}",
        message,
    ), message


@pytest.fixture
def reservation_name() -> Iterator[str]:
    """A fresh lab reservation name; whatever the test made under it is deleted after, even when it fails."""
    name = f"lq-test-{uuid.uuid4().hex[:8]}"
    yield name
    try:
        reservations.reservation_delete(name)
    except slurm.SlurmError:
        pass  # still in use: the test's job is cancelled at the end of the session, and the reservation ends


def _lab_on_gpu2(name: str, *, start: datetime | None, end: datetime, node: str = "gpu2") -> list[str]:
    return reservations.create_argv(name=name, account=COURSE_ACCOUNT, start=start, end=end, nodes=[node])


def _two_days_ahead() -> tuple[datetime, datetime]:
    """A lab far enough ahead that no other test's job (8 h at most) runs into it."""
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    return start, start + timedelta(hours=1)


@pytest.mark.usefixtures("host_behind_utc")
def test_a_lab_reservation_is_read_back_with_the_times_node_and_account_it_was_made_with(
    reservation_name: str,
) -> None:
    start, end = _two_days_ahead()

    made = reservations.reservation_create(_lab_on_gpu2(reservation_name, start=start, end=end))

    assert made is not None
    assert (made.name, made.start, made.end) == (reservation_name, start, end)
    assert (made.nodes, made.accounts) == ("gpu2", COURSE_ACCOUNT)
    assert "IGNORE_JOBS" in made.flags.split(",")
    assert reservations.reservation_list()[reservation_name] == made


def test_making_a_lab_reservation_again_returns_the_one_already_made(
    reservation_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A replayed task: Slurm refuses the second one as overlapping the first, which is the one asked for.
    start, end = _two_days_ahead()
    argv = _lab_on_gpu2(reservation_name, start=start, end=end)
    first = reservations.reservation_create(argv)

    with caplog.at_level(logging.INFO, logger="slurm.reservations"):
        again = reservations.reservation_create(argv)

    assert again == first is not None
    assert [record.getMessage() for record in caplog.records if record.name == "slurm.reservations"] == [
        f"slurm: reservation {reservation_name} already exists"
    ]


def test_a_lab_reservation_slurm_refuses_raises_with_slurms_reason(reservation_name: str) -> None:
    start, end = _two_days_ahead()

    with pytest.raises(slurm.SlurmRejected) as caught:
        reservations.reservation_create(_lab_on_gpu2(reservation_name, start=start, end=end, node="gpu9"))

    assert caught.value.message == "Error creating the reservation: Invalid node name specified"
    assert reservation_name not in reservations.reservation_list()


def test_deleting_a_lab_reservation_that_is_already_gone_is_not_an_error(reservation_name: str) -> None:
    start, end = _two_days_ahead()
    reservations.reservation_create(_lab_on_gpu2(reservation_name, start=start, end=end))
    reservations.reservation_delete(reservation_name)
    assert reservation_name not in reservations.reservation_list()

    reservations.reservation_delete(reservation_name)  # ended, or deleted by hand: nothing left to do


def test_a_lab_reservation_a_job_still_runs_in_is_not_deleted_and_slurm_says_why(
    job_dir: JobDir, reservation_name: str
) -> None:
    reservations.reservation_create(
        _lab_on_gpu2(reservation_name, start=None, end=datetime.now(UTC) + timedelta(minutes=10))
    )
    job_id = job_dir.submit(job_dir.spec(job_dir.script("sleep 120"), reservation=reservation_name))
    try:
        wait_for(lambda: slurm.queue()[job_id].state == "RUNNING")

        with pytest.raises(slurm.SlurmRejected) as caught:
            reservations.reservation_delete(reservation_name)

        assert caught.value.message.endswith("Requested reservation is in use")
        assert reservation_name in reservations.reservation_list()
    finally:
        runner.run(["scancel", job_id])
        wait_for_final(job_id)


def test_an_association_change_that_is_already_so_is_success_with_sacctmgrs_answer() -> None:
    # Two syncs racing, or one replayed after its answer was lost: the second add finds the student there.
    answer = accounts.sacctmgr_apply(accounts.user_add_argv(cluster="lab", account=COURSE_ACCOUNT, users=[STUDENT]))

    assert re.search(r"Nothing new added|Request didn't affect anything", answer), answer


def test_an_association_change_sacctmgr_refuses_raises_with_its_reason() -> None:
    with pytest.raises(slurm.SlurmRejected) as caught:
        accounts.sacctmgr_apply(accounts.user_add_argv(cluster="lab", account="nosuchacct", users=[STUDENT]))

    # Slurm 22.05 and 24.11 word it differently; 24.11 also says "Nothing added", which is no success.
    reason = r"This account 'nosuchacct' doesn't exist\.|No account nosuchacct on cluster lab, skipping\."
    assert re.match(reason, caught.value.message), caught.value.message


def test_worker_secrets_do_not_reach_the_job(job_dir: JobDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", "do-not-leak-4711")
    monkeypatch.setenv("SBATCH_ACCOUNT", "research")  # would redirect the job if read
    job_id = job_dir.submit(job_dir.spec(job_dir.script("env")))

    record = wait_for_final(job_id)

    assert record.state == "COMPLETED" and record.account == "cs101"
    environment = job_dir.read("out.txt")
    assert "SLURM_JOB_ID=" + job_id in environment
    assert "do-not-leak-4711" not in environment
    assert "DJANGO_SECRET_KEY" not in environment


def _client_config(tmp_path: Path, **changes: str) -> Path:
    """A copy of the client config with some keys changed (e.g. a dead port)."""
    source = lab_slurm_conf()
    lines = source.read_text().splitlines()
    for key, value in changes.items():
        lines = [line for line in lines if not line.startswith(f"{key}=")]
        lines.append(f"{key}={value}")
    (tmp_path / "slurm.conf").write_text("\n".join(lines) + "\n")
    gres = source.parent / "gres.conf"
    if gres.exists():
        (tmp_path / "gres.conf").write_text(gres.read_text())
    return tmp_path / "slurm.conf"


def test_an_unreachable_controller_makes_queue_and_submit_unavailable(
    job_dir: JobDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = job_dir.spec(job_dir.script("true"))
    # MessageTimeout=2 shortens the clients' own retry window (10 s on the lab cluster).
    # The copy must be readable by the student: sbatch runs as them.
    dead = _client_config(job_dir.path, SlurmctldPort="1", MessageTimeout="2")
    monkeypatch.setenv("SLURM_CONF", str(dead))
    started = time.monotonic()

    with pytest.raises(slurm.SlurmUnavailable) as queue_error:
        slurm.queue()
    with pytest.raises(slurm.SlurmUnavailable) as submit_error:
        slurm.submit(spec)

    assert queue_error.value.message == "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    assert submit_error.value.message == (
        "Batch job submission failed: Unable to contact slurm controller (connect failure)"
    )
    assert time.monotonic() - started < 20


def test_the_command_timeout_ends_a_wait_for_a_dead_controller(
    settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.SLURM_COMMAND_TIMEOUT = 2  # below the lab's MessageTimeout=10
    monkeypatch.setenv("SLURM_CONF", str(_client_config(tmp_path, SlurmctldPort="1")))
    started = time.monotonic()

    with pytest.raises(slurm.SlurmUnavailable, match="squeue did not answer within 2 s"):
        slurm.queue()

    assert time.monotonic() - started < 5


def test_an_unreachable_slurmdbd_makes_accounting_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", str(_client_config(tmp_path, AccountingStoragePort="1")))

    with pytest.raises(slurm.SlurmUnavailable) as caught:
        slurm.accounting(job_ids=["1"])

    assert "Problem talking to the database: Connection refused" in caught.value.message


def test_a_job_that_left_the_queue_is_found_by_name_in_accounting(early_job: tuple[str, str]) -> None:
    job_id, job_name = early_job
    # MinJobAge=60 on the lab cluster: a finished job left squeue 1-2.5 minutes after it ended.
    wait_for(lambda: job_id not in slurm.queue(), timeout=240, interval=5)

    with runner.command_log() as commands:
        found = slurm.find_by_name(job_name)

    assert found == job_id
    assert [command.tool for command in commands] == ["squeue", "sacct"]
