"""Where the parameter schema and values stop being accepted (courses.scripting): the limits themselves
are allowed, one past them is not."""

import pytest
from django.core.exceptions import ValidationError

from courses.scripting import coerce_value, validate_schema, validate_values

EPOCHS = {"name": "EPOCHS", "type": "int", "default": 5, "min": 1, "max": 50}
NAME = {"name": "NAME", "type": "string", "default": "run"}


def schema_error(schema: object) -> str:
    with pytest.raises(ValidationError) as caught:
        validate_schema(schema)
    return caught.value.messages[0]


def value_error(spec: dict, raw: object) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        coerce_value(spec, raw)
    return caught.value.messages


def test_an_assignment_can_have_exactly_30_parameters():
    schema = validate_schema([{**EPOCHS, "name": f"P{number}"} for number in range(30)])

    assert len(schema) == 30


def test_a_number_parameter_whose_min_equals_its_max_accepts_that_one_value():
    (spec,) = validate_schema([{**EPOCHS, "min": 5, "max": 5}])

    assert coerce_value(spec, "5") == 5
    assert value_error(spec, "4") == ["The smallest allowed value is 5."]


def test_a_choice_of_exactly_200_characters_is_accepted():
    long_choice = "x" * 200

    (spec,) = validate_schema([{"name": "SIZE", "type": "choice", "choices": [long_choice], "default": long_choice}])

    assert spec["choices"] == [long_choice]


def test_a_string_value_of_exactly_200_characters_is_accepted():
    (spec,) = validate_schema([NAME])

    assert coerce_value(spec, "x" * 200) == "x" * 200


def test_a_pattern_of_exactly_200_characters_is_accepted():
    pattern = "[a-z]" * 40

    (spec,) = validate_schema([{**NAME, "pattern": pattern, "default": "a" * 40}])

    assert spec["pattern"] == pattern


def test_a_string_parameter_without_a_pattern_accepts_any_short_text():
    (spec,) = validate_schema([NAME])

    assert spec["pattern"] == ""
    assert coerce_value(spec, "Run 2, lr=0.1") == "Run 2, lr=0.1"


def test_a_string_value_with_the_delete_control_character_is_refused():
    (spec,) = validate_schema([NAME])

    assert value_error(spec, "run\x7f") == ["Line breaks and other control characters are not allowed."]


def test_a_float_parameter_with_a_null_default_is_refused_when_the_schema_is_saved():
    assert schema_error([{"name": "RATE", "type": "float", "default": None}]) == (
        "Parameter 'RATE': the default is not valid: Enter a number."
    )


def test_every_unknown_parameter_name_is_listed():
    (spec,) = validate_schema([EPOCHS])

    with pytest.raises(ValidationError) as caught:
        validate_values([spec], {"PATH": "/tmp", "HOME": "/root", "EPOCHS": "3"})

    assert caught.value.messages == ["Unknown parameters: HOME, PATH."]
