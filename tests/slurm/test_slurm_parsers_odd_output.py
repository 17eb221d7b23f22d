"""The squeue, sacct and sbatch parsers on odd output: small edits of captured real output.

Each edit stands for something Slurm may print on another site or in a bad moment: ISO times when
SLURM_TIME_FORMAT is not honoured, a truncated line, an empty field, empty output.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from slurm import parsers

CAPTURED = Path(__file__).parent / "captured"


def captured(name: str) -> str:
    lines = (CAPTURED / name).read_text().splitlines(keepends=True)
    return "".join(line.replace("^_", "\x1f") for line in lines if not line.startswith("#"))


SQUEUE = captured("squeue.txt")
SACCT = captured("sacct.txt")


def sacct_line(job_id: str) -> str:
    return next(line for line in SACCT.splitlines() if line.startswith(job_id + "\x1f"))


def with_field(line: str, name: str, value: str) -> str:
    parts = line.split(parsers.DELIMITER, len(parsers.SACCT_FIELDS) - 1)
    parts[parsers.SACCT_FIELDS.index(name)] = value
    return parsers.DELIMITER.join(parts)


def test_iso_times_are_read_as_utc_when_the_epoch_format_was_not_honoured() -> None:
    line = (
        SQUEUE.splitlines()[0].replace("1795980395", "2026-11-29T19:26:35").replace("1795980396", "2026-11-29T19:26:36")
    )

    job = parsers.parse_squeue(line)["141"]

    assert job.submit_time == datetime(2026, 11, 29, 19, 26, 35, tzinfo=UTC)
    assert job.start_time == datetime(2026, 11, 29, 19, 26, 36, tzinfo=UTC)


def test_an_unreadable_time_is_no_time_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    line = with_field(sacct_line("8"), "End", "yesterday")

    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        record = parsers.parse_sacct(line)["8"]

    assert record.end is None
    assert record.start == datetime.fromtimestamp(1795980194, tz=UTC), "the other times are still read"
    assert "unreadable time 'yesterday'" in caplog.text


def test_a_truncated_sacct_line_is_skipped_and_the_others_are_read(caplog: pytest.LogCaptureFixture) -> None:
    lines = SACCT.splitlines()
    cut = [line[: line.index("\x1fFAILED")] if line.startswith("9\x1f") else line for line in lines]

    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        records = parsers.parse_sacct("\n".join(cut) + "\n")

    assert "9" not in records
    assert set(records) == set(parsers.parse_sacct(SACCT)) - {"9"}
    assert "skipping unreadable line" in caplog.text


def test_a_job_without_an_exit_code_has_none_not_zero() -> None:
    record = parsers.parse_sacct(with_field(sacct_line("9"), "ExitCode", ""))["9"]

    assert (record.exit_code, record.signal) == (None, None)
    assert record.state == "FAILED"


def test_an_exit_code_without_a_signal_part_has_no_signal() -> None:
    record = parsers.parse_sacct(with_field(sacct_line("9"), "ExitCode", "3"))["9"]

    assert (record.exit_code, record.signal) == (3, None)


def test_an_empty_state_is_no_state_and_nobody_cancelled() -> None:
    record = parsers.parse_sacct(with_field(sacct_line("23"), "State", ""))["23"]

    assert (record.state, record.cancelled_by) == ("", "")


def test_a_state_marked_with_a_plus_is_the_plain_state() -> None:
    record = parsers.parse_sacct(with_field(sacct_line("23"), "State", "CANCELLED+"))["23"]

    assert (record.state, record.cancelled_by) == ("CANCELLED", "")


@pytest.mark.parametrize("stdout", ["", "\n", "  \n\n"])
def test_sbatch_that_printed_nothing_is_a_parse_error(stdout: str) -> None:
    with pytest.raises(parsers.ParseError, match="no job id"):
        parsers.parse_sbatch(stdout)


def test_job_ids_are_read_one_per_line_ignoring_blank_lines_and_spaces() -> None:
    ids = parsers.parse_job_ids("  139\n\n142\n139_2 \n")

    assert ids == ["139", "142", "139_2"]
    assert parsers.newest_job_id(ids) == "142"
    assert parsers.parse_job_ids("") == []
