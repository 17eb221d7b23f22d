"""The `scontrol create reservation` command line for a lab session: what it refuses to build."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from slurm import reservations

END = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)


def test_a_start_time_is_passed_in_utc_whatever_its_zone() -> None:
    start = datetime(2026, 12, 1, 10, 0, tzinfo=timezone(timedelta(hours=-5)))

    argv = reservations.create_argv(name="lq-cs101-7", account="cs101", start=start, end=END, nodes=["gpu1", "gpu2"])

    assert "starttime=2026-12-01T15:00:00" in argv
    assert argv[-1] == "nodes=gpu1,gpu2"


@pytest.mark.usefixtures("worker_behind_utc")
def test_the_times_are_passed_in_utc_whatever_the_workers_time_zone() -> None:
    start = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

    argv = reservations.create_argv(name="lq-cs101-7", account="cs101", start=start, end=END, nodes=["gpu1"])

    assert argv[4:6] == ["starttime=2026-12-01T10:00:00", "endtime=2026-12-01T11:00:00"]


@pytest.mark.parametrize(
    ("start", "end"),
    [(datetime(2026, 12, 1, 10, 0), END), (None, datetime(2026, 12, 1, 11, 0))],
    ids=["naive start", "naive end"],
)
def test_a_time_without_a_zone_is_refused(start: datetime | None, end: datetime) -> None:
    with pytest.raises(ValueError, match="^pass an aware datetime$"):
        reservations.create_argv(name="lab", account="cs101", start=start, end=end, nodes=["gpu1"])


@pytest.mark.parametrize("node", ["gpu1 gpu2", "gpu1,gpu2", "", "gpu1;reboot"])
def test_a_node_name_that_would_change_the_command_is_refused(node: str) -> None:
    with pytest.raises(ValueError, match="not node names"):
        reservations.create_argv(name="lab", account="cs101", start=None, end=END, nodes=["gpu1", node])


def test_a_node_range_as_slurm_writes_it_is_accepted() -> None:
    argv = reservations.create_argv(name="lab", account="cs101", start=None, end=END, nodes=["gpu[1-2]"])

    assert argv[-1] == "nodes=gpu[1-2]"


def test_a_reservation_of_neither_nodes_nor_gpus_is_refused() -> None:
    with pytest.raises(ValueError, match="^reserve nodes or GPUs$"):
        reservations.create_argv(name="lab", account="cs101", start=None, end=END)


def test_a_gpu_reservation_without_a_partition_names_none() -> None:
    argv = reservations.create_argv(name="lab", account="cs101", start=None, end=END, gpus=3)

    assert argv[-1] == "tres=cpu=3,gres/gpu=3"
    assert not any(item.startswith("partition=") for item in argv)


def test_a_reservation_and_account_name_that_could_be_options_are_refused() -> None:
    with pytest.raises(ValueError):
        reservations.create_argv(name="-x", account="cs101", start=None, end=END, nodes=["gpu1"])
    with pytest.raises(ValueError):
        reservations.create_argv(name="lab", account="cs101,research", start=None, end=END, nodes=["gpu1"])
    with pytest.raises(ValueError):
        reservations.create_argv(name="lab", account="cs101", start=None, end=END, gpus=1, partition="-p")
