"""JSON true/false is not a number for a float parameter (courses.scripting): Python would read it as 1.0 / 0.0."""

import pytest
from django.core.exceptions import ValidationError

from courses.scripting import coerce_value, validate_schema

RATE = {"name": "RATE", "type": "float", "default": 0.5, "min": 0.0, "max": 1.0}


@pytest.mark.parametrize("raw", [True, False])
def test_a_boolean_float_value_is_refused(raw):
    (spec,) = validate_schema([RATE])

    with pytest.raises(ValidationError) as caught:
        coerce_value(spec, raw)

    assert caught.value.messages == ["Enter a number."]


def test_a_boolean_default_for_a_float_parameter_is_refused_when_the_schema_is_saved():
    with pytest.raises(ValidationError) as caught:
        validate_schema([{**RATE, "default": True}])

    assert caught.value.messages == ["Parameter 'RATE': the default is not valid: Enter a number."]


def test_an_int_given_for_a_float_parameter_is_a_float():
    (spec,) = validate_schema([RATE])

    value = coerce_value(spec, 1)

    assert value == 1.0 and isinstance(value, float)
