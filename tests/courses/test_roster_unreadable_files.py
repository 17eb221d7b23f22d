"""Roster CSV files the parser cannot use: empty, unreadable, too long, rows without a netid.

Pure (courses.roster): a roster with any error yields no plan to apply, only the errors with their lines.
"""

import csv

from courses.roster import MAX_ROWS, roster_parse, roster_plan

HEADER = "netid,email,name,role\n"
TOO_LONG_CELL = "x" * (csv.field_size_limit() + 1)


def test_an_empty_file_is_refused_as_empty():
    for text in ("", "\ufeff"):
        rows, errors = roster_parse(text)
        assert rows == []
        assert [str(error) for error in errors] == ["The file is empty."]


def test_a_header_the_csv_reader_cannot_read_is_refused_on_line_1():
    rows, errors = roster_parse(f"netid,email,name,{TOO_LONG_CELL}\nstudent1,,,student\n")

    assert rows == []
    assert len(errors) == 1 and errors[0].line == 1
    assert str(errors[0]).startswith("Line 1: This is not a readable CSV file (field larger than field limit")


def test_a_line_the_csv_reader_cannot_read_stops_the_parse_and_blocks_the_whole_roster():
    text = HEADER + "student1,,Ann One,student\n" + f"student2,,{TOO_LONG_CELL},student\n" + "student3,,,student\n"

    rows, errors = roster_parse(text)
    plan = roster_plan(text, {})

    assert [row.netid for row in rows] == ["student1"]
    assert [(error.line, error.message.split(" (")[0]) for error in errors] == [(3, "This line is not valid CSV")]
    assert not plan.ok and not plan.has_changes


def test_a_row_without_a_netid_is_an_error_naming_its_line():
    rows, errors = roster_parse(HEADER + "student1,,,student\n ,ann@example.edu,Ann,student\n")

    assert [row.netid for row in rows] == ["student1"]
    assert [str(error) for error in errors] == ["Line 3: the netid is empty."]


def test_a_row_with_a_missing_netid_cell_counts_as_empty():
    rows, errors = roster_parse("role,name,email,netid\nstudent,Ann\n")

    assert rows == []
    assert [str(error) for error in errors] == ["Line 2: the netid is empty."]


def test_a_roster_longer_than_the_limit_is_refused_at_the_first_row_too_many():
    people = "".join(f"s{number},,,student\n" for number in range(MAX_ROWS + 5))

    rows, errors = roster_parse(HEADER + people)

    assert len(rows) == MAX_ROWS
    assert [str(error) for error in errors] == [f"Line {MAX_ROWS + 2}: A roster is limited to {MAX_ROWS} rows."]
    assert not roster_plan(HEADER + people, {}).ok


def test_a_roster_of_exactly_the_limit_is_accepted():
    people = "".join(f"s{number},,,student\n" for number in range(MAX_ROWS))

    plan = roster_plan(HEADER + people, {})

    assert plan.ok and len(plan.adds) == MAX_ROWS
