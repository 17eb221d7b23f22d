"""Number parameters without min or max (courses.scripting): any value of the right type is accepted."""

import pytest
from django.core.exceptions import ValidationError

from courses.scripting import coerce_value, validate_schema


def test_an_int_parameter_without_bounds_accepts_any_whole_number():
    (spec,) = validate_schema([{"name": "SEED", "type": "int", "default": 0}])

    assert (spec["min"], spec["max"]) == (None, None)
    assert coerce_value(spec, "-1000000") == -1000000
    assert coerce_value(spec, "123456789012") == 123456789012


def test_a_float_parameter_with_only_a_minimum_is_bounded_below_only():
    (spec,) = validate_schema([{"name": "LR", "type": "float", "default": 0.1, "min": 0}])

    assert (spec["min"], spec["max"]) == (0.0, None)
    assert coerce_value(spec, "1e6") == 1e6
    with pytest.raises(ValidationError, match="smallest allowed value is 0.0"):
        coerce_value(spec, "-0.5")


def test_an_int_parameter_with_only_a_maximum_is_bounded_above_only():
    (spec,) = validate_schema([{"name": "EPOCHS", "type": "int", "default": 3, "max": 10}])

    assert coerce_value(spec, "-3") == -3
    with pytest.raises(ValidationError, match="largest allowed value is 10"):
        coerce_value(spec, "11")
