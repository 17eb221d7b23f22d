"""The sacctmgr association and scontrol reservation parsers on small edits of captured real output.

An association line the parser cannot read is an error, never a guess: the reconciliation would
otherwise "fix" a limit it misread.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm import accounts, reservations

CAPTURED = Path(__file__).parent / "captured"


def captured(name: str) -> str:
    return "".join(line for line in (CAPTURED / name).read_text().splitlines(True) if not line.startswith("#"))


ASSOCS = captured("sacctmgr-assoc.txt")
LIMITED = "cs102|student4|||gres/gpu=6000|2|4|cpu=8,gres/gpu=1,mem=16000M|1-01:00:00|normal"
RESERVATIONS = captured("scontrol-reservations.txt")


def test_the_captured_limited_line_is_the_one_these_tests_edit() -> None:
    assert LIMITED in ASSOCS.splitlines()


def test_blank_lines_between_associations_are_skipped() -> None:
    spaced = ASSOCS.replace("\n", "\n\n   \n")

    assert accounts.parse_assocs(spaced) == accounts.parse_assocs(ASSOCS)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("cpu=8,", "cpu8,"), "not a TRES item: 'cpu8'"),
        (("mem=16000M", "mem=16 GB"), "not a memory size: '16 GB'"),
        (("mem=16000M", "mem=lots"), "not a memory size: 'lots'"),
        (("1-01:00:00", "25 hours"), "not a wall time: '25 hours'"),
        (("gres/gpu=6000", "gres/gpu=6000|"), "expected 10 fields, got 11"),
    ],
)
def test_an_association_line_that_cannot_be_read_is_an_error_not_a_guess(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(accounts.ParseError, match=message):
        accounts.parse_assocs(ASSOCS.replace(LIMITED, LIMITED.replace(*edit)))


@pytest.mark.parametrize(
    "edit",
    [("|2|4|", "|two|4|"), ("cpu=8,", "cpu=8G,"), ("gres/gpu=1,", "gres/gpu=1=1,")],
    ids=["a word", "a count with a unit", "two equals signs"],
)
def test_a_count_limit_that_is_not_a_whole_number_is_an_error_too(edit: tuple[str, str]) -> None:
    with pytest.raises(ValueError):
        accounts.parse_assocs(ASSOCS.replace(LIMITED, LIMITED.replace(*edit)))


def test_memory_in_kilobytes_terabytes_and_fractions_becomes_megabytes() -> None:
    edited = LIMITED.replace("mem=16000M", "mem=1.5T")

    (limited,) = [a for a in accounts.parse_assocs(edited) if a.user == "student4"]

    assert limited.max_tres["mem"] == 1572864
    assert accounts.parse_tres("mem=2048K") == {"mem": 2}
    assert accounts.parse_tres("mem=16000") == {"mem": 16000}


def test_a_reservation_with_null_fields_and_no_times_reads_as_empty() -> None:
    edited = (
        RESERVATIONS.replace("StartTime=1795988804", "StartTime=Unknown")
        .replace("EndTime=1795989404", "EndTime=(null)")
        .replace("Nodes=gpu2", "Nodes=(null)")
        .replace("Accounts=cs102", "Accounts=(null)")
        .replace("TRES=cpu=8", "TRES=(null)")
    )

    lab = reservations.parse_reservations(edited)["lq-capture"]

    assert (lab.start, lab.end, lab.nodes, lab.accounts, lab.tres) == (None, None, "", "", "")
    assert lab.flags == "IGNORE_JOBS,SPEC_NODES" and lab.state == "INACTIVE"


def test_a_reservation_of_gpus_keeps_its_tres() -> None:
    edited = RESERVATIONS.replace("TRES=cpu=8", "TRES=cpu=8,gres/gpu=2")

    assert reservations.parse_reservations(edited)["lq-capture"].tres == "cpu=8,gres/gpu=2"


def test_every_reservation_is_read_and_blank_lines_between_them_are_skipped() -> None:
    other = RESERVATIONS.replace("lq-capture", "lq-cs101-7").replace("Accounts=cs102", "Accounts=cs101")

    found = reservations.parse_reservations(RESERVATIONS + "\n   \n" + other)

    assert sorted(found) == ["lq-capture", "lq-cs101-7"]
    assert (found["lq-capture"].name, found["lq-capture"].accounts) == ("lq-capture", "cs102")
    assert (found["lq-cs101-7"].name, found["lq-cs101-7"].accounts) == ("lq-cs101-7", "cs101")


def test_a_reservation_line_without_some_fields_reads_them_as_empty() -> None:
    # Versions print different fields: 24.11 has no Watts=, and NodeName= only for a reservation of cores.
    (line,) = RESERVATIONS.splitlines()
    kept = [item for item in line.split() if item.startswith(("ReservationName=", "Duration=", "NodeCnt="))]

    lab = reservations.parse_reservations(" ".join(kept) + "\n")["lq-capture"]

    assert (lab.start, lab.end) == (None, None)
    assert (lab.nodes, lab.accounts, lab.flags, lab.state, lab.tres) == ("", "", "", "", "")
