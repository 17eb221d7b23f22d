"""A number too large for a float, typed into a parameter schema (courses.scripting), is refused with a
message; it used to escape as an OverflowError (a server error on the assignment form)."""

import pytest
from django.core.exceptions import ValidationError

from courses.scripting import validate_schema

#: JSON reads a 401-digit integer as a Python int, which float() cannot hold.
HUGE = 10**400


def schema_error(schema: object) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        validate_schema(schema)
    return caught.value.messages


def test_a_huge_default_for_a_float_parameter_is_not_a_finite_number():
    assert schema_error([{"name": "RATE", "type": "float", "default": HUGE}]) == [
        "Parameter 'RATE': the default is not valid: Enter a finite number."
    ]


@pytest.mark.parametrize("key", ["min", "max"])
def test_a_huge_bound_for_a_float_parameter_is_too_large(key):
    assert schema_error([{"name": "RATE", "type": "float", "default": 0.5, key: HUGE}]) == [
        f"Parameter 'RATE': '{key}' is too large a number."
    ]


def test_a_huge_bound_for_an_int_parameter_is_a_whole_number_like_any_other():
    (spec,) = validate_schema([{"name": "SEED", "type": "int", "default": 0, "max": HUGE}])

    assert spec["max"] == HUGE
