"""Instructors' patterns (courses.patterns): refused at save time when they backtrack badly, and
always matched with a time bound."""

import pytest

from courses.patterns import PatternTooSlow, pattern_fullmatch, pattern_problem, pattern_search

TOO_SLOW = "The pattern takes too long to match (it backtracks badly); simplify it."
#: Searched for in a long log of words, this backtracks on every word; it is fine on a short value.
SLOW_IN_A_LOG = r"(\w+\s?)*$"
#: Matched against a whole value that is a run of digits and then a letter, this backtracks exponentially;
#: searched for, it finds its first digit at once.
SLOW_ON_A_WHOLE_VALUE = r"([0-9]|[0-9]{2})+"


def test_a_hint_pattern_that_backtracks_on_a_long_log_is_refused_with_the_message_shown_to_the_instructor():
    assert pattern_problem(SLOW_IN_A_LOG) == TOO_SLOW


def test_a_hint_pattern_is_searched_for_so_one_slow_only_on_whole_values_is_accepted():
    assert pattern_problem(SLOW_ON_A_WHOLE_VALUE) == ""


def test_a_parameter_pattern_is_matched_against_whole_values():
    assert pattern_problem(SLOW_ON_A_WHOLE_VALUE, whole=True) == TOO_SLOW
    assert pattern_problem(SLOW_IN_A_LOG, whole=True) == ""


def test_an_invalid_pattern_is_refused_with_the_reason():
    assert pattern_problem("(unclosed").startswith("The pattern is not a valid regular expression (missing )")


def test_a_hint_pattern_is_found_anywhere_in_the_output():
    log = "epoch 3\nFileNotFoundError: dataset mnist not found\n"

    assert pattern_search(r"dataset \w+ not found", log)
    assert not pattern_search(r"CUDA out of memory", log)


def test_a_hint_pattern_that_backtracks_on_this_output_is_cut_off():
    log = " ".join(["word"] * 3000) + "!"

    with pytest.raises(PatternTooSlow):
        pattern_search(SLOW_IN_A_LOG, log)


def test_a_parameter_pattern_must_match_the_whole_value():
    assert pattern_fullmatch(r"[a-z]+", "resnet")
    assert not pattern_fullmatch(r"[a-z]+", "resnet50")


def test_a_whole_value_that_makes_a_saved_pattern_backtrack_is_cut_off():
    with pytest.raises(PatternTooSlow):
        pattern_fullmatch(SLOW_ON_A_WHOLE_VALUE, "0" * 30 + "!")
