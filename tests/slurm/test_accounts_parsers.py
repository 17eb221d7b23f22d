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
    [("00:30:00", 30), ("1-01:00:00", 1500), ("", None), ("UNLIMITED", None), ("05:00", 5), ("00:00:30", 1)],
)
def test_wall_times_become_minutes(text: str, minutes: int | None) -> None:
    assert accounts.parse_wall(text) == minutes


def test_memory_in_other_units_is_converted_to_mb() -> None:
    assert accounts.parse_tres("mem=4G,cpu=2") == {"mem": 4096, "cpu": 2}


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
    assert "tres=cpu=2,gres/gpu=2" in argv and "partition=gpu" in argv and not any(a.startswith("nodes=") for a in argv)


def test_names_that_could_be_options_are_refused() -> None:
    with pytest.raises(ValueError):
        accounts.user_delete_argv(cluster="lab", account="cs102", user="-x")
