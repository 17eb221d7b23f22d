"""sacctmgr and scontrol reservation output, captured on the lab cluster (Slurm 22.05.8), and the sync plan."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from slurm import accounts, reservations

CAPTURED = Path(__file__).parent / "captured"


def captured(name: str) -> str:
    return "".join(line for line in (CAPTURED / name).read_text().splitlines(True) if not line.startswith("#"))


def test_associations_are_read_with_their_limits_and_memory_in_mb() -> None:
    assocs = {(a.account, a.user): a for a in accounts.parse_assocs(captured("sacctmgr-assoc.txt"))}

    assert len(assocs) == 7
    assert assocs[("cs102", "")].grp_tres == {"gres/gpu": 4}
    limited = assocs[("cs102", "student4")]
    assert limited.max_jobs == 2 and limited.max_submit == 4
    assert limited.max_tres == {"cpu": 8, "gres/gpu": 1, "mem": 16000}
    assert limited.max_wall_minutes == 25 * 60
    assert limited.grp_tres_mins == {"gres/gpu": 6000}
    assert limited.qos == ("normal",)
    free = assocs[("cs102", "student1")]
    assert free.max_jobs is None and free.max_tres == {} and free.max_wall_minutes is None


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("00:30:00", 30),
        ("1-01:00:00", 1500),
        ("", None),
        ("UNLIMITED", None),
        ("INFINITE", None),
        ("05:00", 5),
        ("00:00:30", 1),
    ],
)
def test_wall_times_become_minutes(text: str, minutes: int | None) -> None:
    assert accounts.parse_wall(text) == minutes


def test_memory_in_other_units_is_converted_to_mb() -> None:
    assert accounts.parse_tres("mem=4G,cpu=2") == {"mem": 4096, "cpu": 2}


@pytest.mark.parametrize(
    ("tres", "mb"),
    [
        ("mem=16000", 16000),
        ("mem=16000M", 16000),
        ("mem=1536000K", 1500),
        ("mem=4G", 4096),
        ("mem=2T", 2 * 1024**2),
        ("mem=1P", 1024**3),
    ],
)
def test_a_memory_limit_in_any_unit_sacctmgr_prints_becomes_megabytes(tres: str, mb: int) -> None:
    assert accounts.parse_tres(tres) == {"mem": mb}


def test_an_association_on_one_partition_keeps_its_partition() -> None:
    # The plan leaves an association on a partition alone (it manages the course-wide ones only).
    edited = captured("sacctmgr-assoc.txt").replace("cs102|student2||", "cs102|student2|gpu|")

    assocs = {(a.account, a.user): a for a in accounts.parse_assocs(edited)}

    assert assocs[("cs102", "student2")].partition == "gpu"
    assert assocs[("cs102", "student1")].partition == ""


def test_an_association_with_several_qos_has_each_of_them() -> None:
    edited = captured("sacctmgr-assoc.txt").replace("cs102|student2||||||||normal", "cs102|student2||||||||lab,normal")

    assocs = {(a.account, a.user): a for a in accounts.parse_assocs(edited)}

    assert assocs[("cs102", "student2")].qos == ("lab", "normal")
    assert assocs[("cs102", "student1")].qos == ("normal",)


def test_a_line_with_the_wrong_number_of_fields_is_an_error_not_a_guess() -> None:
    with pytest.raises(accounts.ParseError):
        accounts.parse_assocs("cs102|student1|normal\n")


def test_reservations_are_read_one_per_line_with_utc_times() -> None:
    found = reservations.parse_reservations(captured("scontrol-reservations.txt"))

    lab = found["lq-capture"]
    assert lab.nodes == "gpu2" and lab.accounts == "cs102" and lab.state == "INACTIVE"
    assert lab.start == datetime.fromtimestamp(1795988804, tz=UTC)
    assert "IGNORE_JOBS" in lab.flags
    assert reservations.parse_reservations("No reservations in the system\n") == {}


def test_a_node_reservation_command_names_the_account_nodes_and_times() -> None:
    end = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
    argv = reservations.create_argv(name="lq-cs102-1", account="cs102", start=None, end=end, nodes=["gpu2"])
    assert argv == [
        "scontrol",
        "create",
        "reservation",
        "reservationname=lq-cs102-1",
        "starttime=now",
        "endtime=2026-12-01T11:00:00",
        "accounts=cs102",
        "flags=ignore_jobs",
        "nodes=gpu2",
    ]


def test_a_gpu_reservation_command_uses_the_tres_form_of_slurm_23_11() -> None:
    end = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
    argv = reservations.create_argv(name="lab", account="cs102", start=None, end=end, gpus=2, partition="gpu")
    assert argv == [
        "scontrol",
        "create",
        "reservation",
        "reservationname=lab",
        "starttime=now",
        "endtime=2026-12-01T11:00:00",
        "accounts=cs102",
        "flags=ignore_jobs",
        "tres=cpu=2,gres/gpu=2",
        "partition=gpu",
    ]


def test_names_that_could_be_options_are_refused() -> None:
    with pytest.raises(ValueError):
        accounts.user_delete_argv(cluster="lab", account="cs102", user="-x")


def test_an_empty_user_or_account_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not a valid Slurm account or user name: ''"):
        accounts.user_add_argv(cluster="lab", account="cs102", users=["student1", ""])
    with pytest.raises(ValueError, match="not a valid Slurm account or user name: ''"):
        accounts.account_add_argv(cluster="lab", account="", description="CS 102")
