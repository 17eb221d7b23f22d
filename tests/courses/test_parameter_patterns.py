"""String parameter patterns (courses.scripting): a pattern that backtracks on whole values is refused
when it is saved, and a value that makes an older pattern backtrack is refused with a clear message."""

import pytest
from django.core.exceptions import ValidationError

from courses.scripting import coerce_value, validate_schema

#: Student ids as runs of one- or two-digit groups: fullmatch on "000...0!" backtracks exponentially.
BACKTRACKING = "([0-9]|[0-9]{2})+"


def test_a_parameter_pattern_that_backtracks_on_whole_values_is_refused_when_the_schema_is_saved():
    with pytest.raises(ValidationError) as caught:
        validate_schema([{"name": "STUDENT_ID", "type": "string", "default": "1234", "pattern": BACKTRACKING}])

    assert caught.value.messages == [
        "Parameter 'STUDENT_ID': the pattern takes too long to match (it backtracks badly); simplify it."
    ]


def test_a_value_that_makes_a_pattern_saved_earlier_backtrack_is_refused_with_a_message_for_the_student():
    # Saved before patterns were checked at save time: the schema is not validated again.
    spec = {"name": "STUDENT_ID", "type": "string", "default": "1234", "pattern": BACKTRACKING}

    with pytest.raises(ValidationError) as caught:
        coerce_value(spec, "0" * 30 + "!")

    assert caught.value.messages == [
        "This value takes too long to check against the assignment's pattern, which backtracks badly. "
        "Use a shorter or simpler value, and tell your instructor so they can simplify the pattern."
    ]
