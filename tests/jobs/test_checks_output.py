"""The check output format (jobs.checks.check_output_parse): pure, no database, no cluster."""

from decimal import Decimal

from jobs.checks import MAX_CHECKS, CheckLine, check_output_parse


def test_pass_and_fail_lines_and_a_score_are_read():
    output = check_output_parse(
        "CHECK pass compiles: the program builds\nCHECK fail accuracy: 0.42 is below 0.9\nSCORE 7/10\n"
    )
    assert output.checks == (
        CheckLine(passed=True, name="compiles", message="the program builds"),
        CheckLine(passed=False, name="accuracy", message="0.42 is below 0.9"),
    )
    assert (output.score, output.max_score) == (Decimal("7"), Decimal("10"))


def test_malformed_lines_are_ignored():
    text = "\n".join(
        [
            "hello from the check",
            "CHECK maybe style: not pass or fail",
            "CHECK pass no colon here",
            "CHECK pass : a name is required",
            "  CHECK pass indented: not at the start of the line",
            "check pass lower: the keyword is upper case",
            "CHECK pass bell\x07: control characters",
            "SCORE seven/ten",
            "SCORE 7 / 10",
            "SCORE -1/10",
            "CHECK pass kept: yes",
        ]
    )
    output = check_output_parse(text)
    assert output.checks == (CheckLine(passed=True, name="kept", message="yes"),)
    assert output.score is None and output.max_score is None


def test_a_score_above_its_maximum_is_refused():
    assert check_output_parse("SCORE 11/10").score is None


def test_a_maximum_of_zero_is_refused():
    output = check_output_parse("SCORE 0/0")
    assert output.score is None and output.max_score is None


def test_a_score_of_zero_and_a_full_score_are_taken():
    assert check_output_parse("SCORE 0/5").score == Decimal("0")
    assert check_output_parse("SCORE 5/5").score == Decimal("5")


def test_fractional_points_are_taken_to_two_places():
    output = check_output_parse("SCORE 7.5/10")
    assert (output.score, output.max_score) == (Decimal("7.5"), Decimal("10"))
    assert check_output_parse("SCORE 7.125/10").score is None


def test_the_last_valid_score_line_counts():
    assert check_output_parse("SCORE 3/10\nSCORE 99/10\nSCORE 8/10\n").score == Decimal("8")


def test_a_name_given_twice_keeps_its_first_line():
    output = check_output_parse("CHECK pass tests: all 5\nCHECK fail tests: none\n")
    assert output.checks == (CheckLine(passed=True, name="tests", message="all 5"),)


def test_windows_line_ends_and_trailing_spaces_are_read():
    output = check_output_parse("CHECK fail shape: wrong  \r\nSCORE 1/2\r\n")
    assert output.checks == (CheckLine(passed=False, name="shape", message="wrong"),)
    assert output.score == Decimal("1")


def test_an_empty_message_is_allowed():
    assert check_output_parse("CHECK pass runs:").checks == (CheckLine(passed=True, name="runs", message=""),)


def test_at_most_fifty_checks_are_kept():
    text = "\n".join(f"CHECK pass check{number}: ok" for number in range(MAX_CHECKS + 10))
    assert len(check_output_parse(text).checks) == MAX_CHECKS


def test_nothing_in_the_output_gives_no_checks_and_no_score():
    output = check_output_parse("")
    assert output.checks == () and output.score is None
