"""Which roster lines are refused, with what message, and what a good line records about its person.

Pure (courses.roster): the instructor sees each message as "Line N: ..." and fixes the file; a refused line
never becomes a person to add.
"""

from courses.roster import MAX_ROWS, RosterRow, roster_parse, roster_plan

HEADER = "netid,email,name,role\n"


def messages(text: str) -> list[str]:
    return [str(error) for error in roster_parse(text)[1]]


def test_each_bad_line_is_reported_with_its_line_and_what_is_wrong():
    text = HEADER + (
        "student1,,Sam Student,student\n"  # line 2: fine
        "Bad Name!,,Bad Name,student\n"  # line 3
        "ROOT,,Root,instructor\n"  # line 4
        "student2,not-an-email,Kim Lee,student\n"  # line 5
        "student3,,Lee Park,professor\n"  # line 6
        "Student1,,Sam Again,ta\n"  # line 7
        "student1,,Sam Typo,studnet\n"  # line 8
    )

    assert messages(text) == [
        "Line 3: “Bad Name!” is not a valid cluster user name (netid).",
        "Line 4: “root” is a reserved account on the cluster; the portal never runs anything as it.",
        "Line 5: “not-an-email” is not a valid e-mail address.",
        "Line 6: unknown role “professor”; use student, ta or instructor.",
        "Line 7: netid “student1” is already on line 2.",
        "Line 8: unknown role “studnet”; use student, ta or instructor.",
    ]


def test_a_refused_line_is_not_among_the_people_read():
    text = HEADER + "student1,,,student\nstudent2,not-an-email,,student\nroot,,,student\nstudent1,,,ta\n"

    rows, errors = roster_parse(text)

    assert [row.netid for row in rows] == ["student1"]
    assert [error.line for error in errors] == [3, 4, 5]


def test_a_repeated_netid_names_the_line_that_first_had_it_even_after_other_lines():
    text = HEADER + "student1,,,student\nstudent2,,,student\nstudent3,,,student\nstudent2,,,ta\nstudent3,,,ta\n"

    assert messages(text) == [
        "Line 5: netid “student2” is already on line 3.",
        "Line 6: netid “student3” is already on line 4.",
    ]


def test_a_good_line_records_the_netid_email_names_and_role_it_gives():
    rows, errors = roster_parse(HEADER + "Student4 , Pat.Newcomer@Example.edu ,Maria José García, Teaching Assistant\n")

    assert errors == []
    assert rows == [RosterRow(2, "student4", "Pat.Newcomer@Example.edu", "Maria", "José García", "ta")]


def test_a_line_without_an_email_or_a_name_is_accepted_with_them_empty():
    rows, errors = roster_parse(HEADER + "student4,,,Instructor\n")

    assert errors == []
    assert rows == [RosterRow(2, "student4", "", "", "", "instructor")]


def test_blank_lines_between_people_do_not_end_the_roster():
    rows, errors = roster_parse(HEADER + "student1,,,student\n\n , , , \nstudent2,,,ta\n")

    assert errors == []
    assert [(row.line, row.netid) for row in rows] == [(2, "student1"), (5, "student2")]


def test_a_header_that_only_resembles_the_column_names_is_refused_with_every_column_missing_named():
    rows, errors = roster_parse("XNetID,E-mail,Name,Role\nstudent1,,,student\n")

    assert rows == []
    assert [str(error) for error in errors] == [
        "Line 1: The header row must name the columns netid, email, name, role; missing: netid, email."
    ]


def test_bad_lines_count_toward_the_row_limit():
    people = "bad!,,,student\n" + "".join(f"s{number},,,student\n" for number in range(MAX_ROWS))

    rows, errors = roster_parse(HEADER + people)

    assert len(rows) == MAX_ROWS - 1
    assert [str(error) for error in errors][-1] == f"Line {MAX_ROWS + 2}: A roster is limited to {MAX_ROWS} rows."


def test_a_roster_within_the_limit_is_not_called_too_long_when_its_lines_have_several_problems():
    people = "".join(f"s{number},not-an-email,,professor\n" for number in range(MAX_ROWS))

    rows, errors = roster_parse(HEADER + people)

    assert rows == []
    assert len(errors) == 2 * MAX_ROWS
    assert not any("limited" in error.message for error in errors)
    assert errors[-1].line == MAX_ROWS + 1
    assert not roster_plan(HEADER + people, {}).ok
