"""Lab reservations the portal cannot make: nodes another lab holds, the `gpus` strategy when Slurm does
not answer, a lab that is no longer scheduled.

No reservation is created on the lab cluster: SLURM_BIN_DIR points at an empty folder, so any scontrol
these tests would run cannot start (a wrong behaviour fails the test instead of taking nodes).
"""

from datetime import UTC, timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from clusterpolicy import labs
from courses.models import Course, LabSession
from jobs.tasks import labs_tick
from slurm import runner

State = LabSession.State


@pytest.fixture(autouse=True)
def no_slurm_tools(settings, tmp_path: Path) -> Path:
    settings.SLURM_BIN_DIR = str(tmp_path)
    settings.LABQUEUE_RESERVABLE_NODES = ["gpu1", "gpu2"]
    return tmp_path


def lab(course: Course, *, starts_in: timedelta, minutes: int = 60, **fields) -> LabSession:
    start = timezone.now() + starts_in
    return LabSession.objects.create(
        course=course, starts_at=start, ends_at=start + timedelta(minutes=minutes), **fields
    )


def holding(course: Course, nodes: str, *, starts_in: timedelta, **fields) -> LabSession:
    """Another course's lab whose reservation holds these nodes (reserved, unless `fields` say otherwise)."""
    values = {"state": State.RESERVED, "reservation_name": "lq-cs102-1", "reservation_active": True, **fields}
    return lab(course, starts_in=starts_in, reserved_nodes=nodes, **values)


def test_a_lab_needing_nodes_another_lab_holds_fails_with_the_reason_on_the_labs_page(
    client, instructor, course, other_course
):
    holding(other_course, "gpu1", starts_in=timedelta(minutes=-10))
    session = lab(course, starts_in=timedelta(minutes=20), nodes=2)
    next_week = lab(course, starts_in=timedelta(days=7), nodes=2)  # not due yet: this tick leaves it alone

    with runner.command_log() as commands:
        labs_tick()

    assert commands == [], "the portal refuses before asking Slurm"
    session.refresh_from_db()
    assert session.state == State.FAILED and not session.reservation_active
    next_week.refresh_from_db()
    assert (next_week.state, next_week.message) == (State.SCHEDULED, ""), "only the refused lab failed"
    assert session.message == ("Slurm refused the reservation: only 1 reservable node(s) free for this lab, 2 needed")
    client.force_login(instructor)
    page = client.get(reverse("courses:lab-list", args=["cs101"])).content.decode()
    assert "Could not be reserved" in page and escape(session.message) in page


def test_a_lab_that_another_lab_no_longer_overlaps_may_use_its_nodes(course, other_course):
    holding(other_course, "gpu1,gpu2", starts_in=timedelta(hours=-3))
    session = lab(course, starts_in=timedelta(minutes=20), nodes=2)

    with runner.command_log() as commands:
        labs_tick()

    assert [command.argv[-1] for command in commands if command.tool == "scontrol"][:1] == ["nodes=gpu1,gpu2"]
    session.refresh_from_db()
    assert session.state == State.SCHEDULED, "Slurm did not answer: tried again on the next tick"


def test_a_lab_holding_both_nodes_leaves_none_for_an_overlapping_lab(course, other_course):
    holding(other_course, "gpu1,gpu2", starts_in=timedelta(minutes=-10))
    session = lab(course, starts_in=timedelta(minutes=20), nodes=1)

    with runner.command_log() as commands:
        counts = labs.labs_tick()

    assert commands == [] and counts == {"reserved": 0, "ended": 0, "released": 0}
    session.refresh_from_db()
    assert session.message == "Slurm refused the reservation: only 0 reservable node(s) free for this lab, 1 needed"


def test_a_lab_reserved_for_after_this_one_ends_does_not_hold_its_nodes_now(course, other_course):
    holding(other_course, "gpu1,gpu2", starts_in=timedelta(minutes=90))  # this lab runs from 20 to 80 minutes from now
    lab(course, starts_in=timedelta(minutes=20), nodes=2)

    with runner.command_log() as commands:
        labs_tick()

    assert [command.argv[-1] for command in commands if command.tool == "scontrol"][:1] == ["nodes=gpu1,gpu2"]


def test_a_lab_cancelled_while_slurm_refused_it_stays_cancelled_not_failed(course, other_course):
    holding(other_course, "gpu1,gpu2", starts_in=timedelta(minutes=-10))
    session = lab(course, starts_in=timedelta(minutes=20), nodes=1)
    LabSession.objects.filter(pk=session.pk).update(state=State.CANCELLED)  # the instructor, meanwhile

    assert labs.lab_reserve(session=session) is False  # the worker still holds it as scheduled

    session.refresh_from_db()
    assert (session.state, session.message) == (State.CANCELLED, "")


def test_an_overlapping_lab_whose_reservation_is_gone_no_longer_holds_its_nodes(course, other_course):
    holding(
        other_course, "gpu1,gpu2", starts_in=timedelta(minutes=-10), state=State.CANCELLED, reservation_active=False
    )  # its instructor cancelled it and the reservation was removed
    lab(course, starts_in=timedelta(minutes=20), nodes=2)

    with runner.command_log() as commands:
        labs_tick()

    assert [command.argv[-1] for command in commands if command.tool == "scontrol"][:1] == ["nodes=gpu1,gpu2"]


def test_with_the_gpus_strategy_a_lab_asks_for_gpus_and_stays_scheduled_while_slurm_does_not_answer(settings, course):
    settings.LABQUEUE_RESERVATION_STRATEGY = "gpus"
    session = lab(course, starts_in=timedelta(minutes=20), gpus=3)

    with runner.command_log() as commands:
        labs_tick()  # logs that Slurm did not answer

    creates = [command.argv for command in commands if command.argv[1:3] == ["create", "reservation"]]
    assert len(creates) == 1
    assert creates[0][-2:] == ["tres=cpu=3,gres/gpu=3", "partition=gpu"]
    assert not any(arg.startswith("nodes=") for arg in creates[0])
    session.refresh_from_db()
    assert (session.state, session.message, session.reservation_active) == (State.SCHEDULED, "", False)


@pytest.mark.parametrize("strategy", ["nodes", "gpus"])
@pytest.mark.parametrize("starts_in", [timedelta(minutes=20), timedelta(minutes=-5)])
def test_a_lab_still_ahead_is_reserved_from_its_start_and_one_already_on_from_now(
    settings, course, strategy, starts_in
):
    settings.LABQUEUE_RESERVATION_STRATEGY = strategy
    session = lab(course, starts_in=starts_in, nodes=1)

    with runner.command_log() as commands:
        labs_tick()

    [create] = [command.argv for command in commands if command.argv[1:3] == ["create", "reservation"]]
    ahead = starts_in > timedelta(0)
    assert create[4] == (
        f"starttime={session.starts_at.astimezone(UTC):%Y-%m-%dT%H:%M:%S}" if ahead else "starttime=now"
    )


def test_with_the_gpus_strategy_a_lab_that_names_no_gpu_count_asks_for_one(settings, course):
    settings.LABQUEUE_RESERVATION_STRATEGY = "gpus"
    lab(course, starts_in=timedelta(minutes=20), gpus=None)

    with runner.command_log() as commands:
        labs_tick()

    [create] = [command.argv for command in commands if command.argv[1:3] == ["create", "reservation"]]
    assert create[-2:] == ["tres=cpu=1,gres/gpu=1", "partition=gpu"]


def test_reserving_a_lab_that_is_no_longer_scheduled_does_nothing(course):
    session = lab(course, starts_in=timedelta(minutes=20), state=State.CANCELLED)

    with runner.command_log() as commands:
        assert labs.lab_reserve(session=session) is False

    assert commands == []
    session.refresh_from_db()
    assert (session.state, session.reservation_name, session.reservation_active) == (State.CANCELLED, "", False)
