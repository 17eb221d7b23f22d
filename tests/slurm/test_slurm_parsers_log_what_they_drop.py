"""What the squeue and sacct parsers drop, they log: once per record, in words an operator can search for,
with at most 500 characters of the dropped text (a job name is chosen by a student and may be huge), and
the records after it are still read. Inputs are small edits of output captured on both Slurm versions.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from slurm import parsers

CAPTURED = Path(__file__).parent / "captured"
MARKER = "~Capture1"  # the marker fixed in the captures
D = parsers.DELIMITER


def captured(name: str) -> str:
    """A capture file: "#" lines are notes, "^_" (as cat -v shows it) is the delimiter."""
    lines = (CAPTURED / name).read_text().splitlines(keepends=True)
    return "".join(line.replace("^_", D) for line in lines if not line.startswith("#"))


SQUEUE_22 = captured("squeue.txt")
SACCT_22 = captured("sacct.txt")
SQUEUE_24 = captured("24.11/squeue.txt")


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(record.levelname, record.getMessage()) for record in caplog.records if record.name == "slurm.parsers"]


def test_an_unreadable_squeue_line_is_logged_whole_and_the_next_lines_are_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        jobs = parsers.parse_squeue("garbage without delimiters\n" + SQUEUE_22)

    assert len(jobs) == 10
    assert warnings_of(caplog) == [("WARNING", "slurm: skipping unreadable line 'garbage without delimiters'")]


def test_a_sacct_record_without_its_comment_field_is_skipped_and_the_next_records_are_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Job 9 as sacct prints it when asked for fields up to JobName only; its name is a student's 600 characters.
    name = "n" * 499 + "!" + "tail" * 25
    line_9 = next(line for line in SACCT_22.splitlines() if line.startswith("9" + D))
    without_comment = line_9.rsplit(D, 2)[0] + D + name
    others = [line for line in SACCT_22.splitlines() if not line.startswith("9" + D)]

    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        found = parsers.parse_sacct("\n".join([without_comment, *others]) + "\n")

    assert set(found) == {"8", "10", "11", "23", "4", "259"}
    assert warnings_of(caplog) == [
        ("WARNING", f"slurm: skipping a record without a comment field {name[:500]!r}"),
    ]
    assert name[:500].endswith("!")


def test_a_framed_record_that_does_not_end_with_its_submit_time_is_skipped_and_the_next_are_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 24.11's squeue, with job 348's closing submit time (the framing "%V") replaced by text and a long name.
    def broken(record: str) -> str:
        fields = record.split(D)
        start = D.join(fields[:10]) + D
        name = "n" * (499 - len(start)) + "!" + "tail" * 25
        return start + name + D + "N/A"

    records = [record for record in SQUEUE_24.split(MARKER + "\n") if record]
    records = [broken(record) if record.startswith("348" + D) else record for record in records]
    bad = next(record for record in records if record.startswith("348" + D))

    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        jobs = parsers.parse_squeue("".join(record + MARKER + "\n" for record in records), marker=MARKER)

    assert set(jobs) == {"351", "347", "349", "354", "352", "353", "350"}
    assert warnings_of(caplog) == [("WARNING", f"slurm: skipping a record without its end {bad[:500]!r}")]
    assert bad[:500].endswith("!")


def test_output_after_the_last_marker_is_logged_as_an_error_with_its_first_500_characters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # SLURM_TIME_FORMAT not honoured for the last job: its line has no marker and does not end in one.
    start = "4242" + D + "student1" + D
    unframed = start + "x" * (499 - len(start)) + "!" + "y" * 300 + "\n"

    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        jobs = parsers.parse_squeue(SQUEUE_24 + unframed, marker=MARKER)

    assert "4242" not in jobs and len(jobs) == 8
    assert warnings_of(caplog) == [
        (
            "ERROR",
            "slurm: dropping output not framed by the time marker (is SLURM_TIME_FORMAT honoured?): "
            f"{unframed[:500]!r}",
        ),
    ]
    assert unframed[:500].endswith("!")


def test_a_job_id_printed_three_times_keeps_none_of_them_and_the_jobs_after_it_are_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, *rest = SQUEUE_22.splitlines()
    stdout = "\n".join([first, first, first, *rest]) + "\n"

    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        jobs = parsers.parse_squeue(stdout)

    assert first.startswith("141" + D)
    assert set(jobs) == {"143", "140", "142", "139", "12", "133", "8", "10", "4"}
    assert warnings_of(caplog) == [
        ("WARNING", "slurm: squeue printed job 141 more than once; keeping none of them"),
        ("WARNING", "slurm: squeue printed job 141 more than once; keeping none of them"),
    ]


def test_an_unreadable_time_is_logged_with_the_text_slurm_printed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        moment = parsers.parse_time("yesterday")

    assert moment is None
    assert warnings_of(caplog) == [("WARNING", "slurm: unreadable time 'yesterday'")]


# As captured: sacct's Start and End of a pending job (Unknown), squeue's start of one (N/A), and 24.11's
# sacct Start of a job cancelled before it started (None).
@pytest.mark.parametrize("value", ["Unknown", "N/A", "None"])
def test_the_words_slurm_prints_for_no_time_are_no_time_and_not_worth_a_warning(
    value: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        moment = parsers.parse_time(value)

    assert moment is None
    assert warnings_of(caplog) == []
