"""The parameter schema, parameter values, and the batch script the portal writes (courses.scripting)."""

import subprocess

import pytest
from django.core.exceptions import ValidationError

from courses.scripting import (
    Resources,
    coerce_value,
    default_values,
    render_script,
    validate_schema,
    validate_template,
    validate_values,
)

EPOCHS = {"name": "EPOCHS", "type": "int", "default": 5, "min": 1, "max": 50}
RATE = {"name": "RATE", "type": "float", "default": 0.5, "min": 0.0, "max": 1.0}
SIZE = {"name": "SIZE", "type": "choice", "choices": ["small", "large"], "default": "small"}
NAME = {"name": "NAME", "type": "string", "default": "run", "pattern": ".*"}
SCHEMA = validate_schema([EPOCHS, RATE, SIZE, NAME])
SPECS = {spec["name"]: spec for spec in SCHEMA}

RESOURCES = Resources(gpus=2, cpus=4, mem_mb=8000, minutes=90)
EXPECTED_SBATCH = [
    "#SBATCH --gres=gpu:2",
    "#SBATCH --nodes=1",
    "#SBATCH --ntasks=1",
    "#SBATCH --cpus-per-task=4",
    "#SBATCH --mem=8000M",
    "#SBATCH --time=01:30:00",
]
BODY = 'python train.py --epochs "$EPOCHS" --name "$NAME"\n'

# Shell and Slurm tricks a student might type into a parameter field.
SHELL_TRICKS = ["; id", "$(id)", "`id`", "#SBATCH --gres=gpu:8", "a && id", "x | sh", "> /etc/passwd"]
NEWLINE_TRICKS = ["run\nid", "run\n#SBATCH --gres=gpu:8", "run\rid", "run\x00", "\x1b[31mred", "tab\there"]


def schema_error(schema: object) -> str:
    with pytest.raises(ValidationError) as caught:
        validate_schema(schema)
    return caught.value.messages[0]


def value_error(spec: dict, raw: object) -> str:
    with pytest.raises(ValidationError) as caught:
        coerce_value(spec, raw)
    return caught.value.messages[0]


def sbatch_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith("#SBATCH")]


# ---- the schema ----


def test_a_well_formed_schema_is_returned_normalised():
    assert validate_schema([EPOCHS, {**SIZE, "help": "Model size", "label": "Size"}]) == [
        {"name": "EPOCHS", "type": "int", "help": "", "label": "", "min": 1, "max": 50, "default": 5},
        {
            "name": "SIZE",
            "type": "choice",
            "help": "Model size",
            "label": "Size",
            "choices": ["small", "large"],
            "default": "small",
        },
    ]


def test_an_empty_schema_is_fine():
    assert validate_schema([]) == []


def test_a_schema_that_is_not_a_list_is_refused():
    assert schema_error({"name": "EPOCHS"}) == "Parameters must be a list of parameter definitions."


def test_a_parameter_that_is_not_an_object_is_refused():
    assert schema_error(["EPOCHS"]) == "Parameter 1 must be an object with a name and a type."


@pytest.mark.parametrize(
    "name", ["1EPOCHS", "MY-VAR", "two words", "", "A" * 33, "EPOCHS\n", "PATH\n", "ÉPOQUE", None, 5]
)
def test_a_name_that_is_not_a_shell_variable_name_is_refused(name):
    assert schema_error([EPOCHS, {**NAME, "name": name}]) == (
        "Parameter 2: the name must be a shell variable name "
        "(letters, digits and '_', not starting with a digit, at most 32 characters)."
    )


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "path",
        "HOME",
        "IFS",
        "BASH_ENV",
        "DATASET",
        "SLURM_X",
        "slurm_job_id",
        "LD_PRELOAD",
        "CUDA_VISIBLE_DEVICES",
        "LABQUEUE_TOKEN",
    ],
)
def test_a_name_reserved_by_the_shell_slurm_or_the_portal_is_refused(name):
    assert schema_error([{**NAME, "name": name}]) == (
        f"Parameter '{name}': this name is reserved by the shell, Slurm or the portal."
    )


def test_a_name_defined_twice_is_refused():
    assert schema_error([EPOCHS, {**RATE, "name": "EPOCHS"}]) == "Parameter 'EPOCHS' is defined twice."


@pytest.mark.parametrize("kind", ["integer", "boolean", "", None])
def test_an_unknown_type_is_refused(kind):
    assert schema_error([{**EPOCHS, "type": kind}]) == (
        "Parameter 'EPOCHS': the type must be one of int, float, choice, string, bool."
    )


def test_unknown_keys_are_refused_and_named():
    assert schema_error([{**EPOCHS, "step": 1, "maximum": 9}]) == "Parameter 'EPOCHS': unknown keys maximum, step."


def test_min_greater_than_max_is_refused():
    assert schema_error([{**EPOCHS, "min": 10, "max": 2}]) == "Parameter 'EPOCHS': min is greater than max."


@pytest.mark.parametrize("bound", ["5", True, [1]])
def test_a_bound_that_is_not_a_number_is_refused(bound):
    assert schema_error([{**EPOCHS, "min": bound}]) == "Parameter 'EPOCHS': 'min' must be a number."


def test_an_int_bound_must_be_a_whole_number():
    assert schema_error([{**EPOCHS, "max": 2.5}]) == "Parameter 'EPOCHS': 'max' must be a whole number."


def test_a_missing_default_is_refused():
    spec = {key: value for key, value in EPOCHS.items() if key != "default"}
    assert schema_error([spec]) == "Parameter 'EPOCHS': a default value is required."


def test_a_default_above_max_is_refused():
    assert schema_error([{**EPOCHS, "default": 51}]) == (
        "Parameter 'EPOCHS': the default is not valid: The largest allowed value is 50."
    )


def test_a_default_below_min_is_refused():
    assert schema_error([{**RATE, "default": -0.1}]) == (
        "Parameter 'RATE': the default is not valid: The smallest allowed value is 0.0."
    )


def test_a_default_that_is_not_one_of_the_choices_is_refused():
    assert schema_error([{**SIZE, "default": "medium"}]) == (
        "Parameter 'SIZE': the default is not valid: Choose one of: small, large."
    )


def test_a_default_that_does_not_match_the_pattern_is_refused():
    assert schema_error([{**NAME, "pattern": "[a-z]+", "default": "Run 1"}]) == (
        "Parameter 'NAME': the default is not valid: The value must match the pattern [a-z]+."
    )


@pytest.mark.parametrize("choices", [None, [], "small,large"])
def test_a_choice_without_a_list_of_choices_is_refused(choices):
    spec = {**SIZE, "choices": choices}
    if choices is None:
        del spec["choices"]
    assert schema_error([spec]) == "Parameter 'SIZE': a choice needs a non-empty list of choices."


@pytest.mark.parametrize("choice", ["", 3, "x" * 201])
def test_every_choice_must_be_a_short_non_empty_text(choice):
    assert schema_error([{**SIZE, "choices": ["small", choice]}]) == (
        "Parameter 'SIZE': every choice must be a short non-empty text."
    )


def test_a_choice_with_a_line_break_is_refused():
    assert schema_error([{**SIZE, "choices": ["small", "large\nid"]}]) == (
        "Parameter 'SIZE': choices cannot contain control characters."
    )


def test_an_invalid_regular_expression_is_refused_with_the_reason():
    message = schema_error([{**NAME, "pattern": "[a-z"}])
    assert message.startswith("Parameter 'NAME': the pattern is not a valid regular expression (")
    assert "unterminated character set" in message


def test_a_pattern_longer_than_200_characters_is_refused():
    assert schema_error([{**NAME, "pattern": "a?" * 101}]) == (
        "Parameter 'NAME': the pattern must be at most 200 characters."
    )


def test_more_than_30_parameters_are_refused():
    schema = [{**EPOCHS, "name": f"P{number}"} for number in range(31)]
    assert schema_error(schema) == "An assignment can have at most 30 parameters."


# ---- values ----


def test_an_int_value_is_coerced_and_checked_against_its_bounds():
    assert coerce_value(SPECS["EPOCHS"], "7") == 7
    assert value_error(SPECS["EPOCHS"], "0") == "The smallest allowed value is 1."
    assert value_error(SPECS["EPOCHS"], "51") == "The largest allowed value is 50."


@pytest.mark.parametrize("raw", ["2.5", "seven", "", True])
def test_an_int_value_must_be_a_whole_number(raw):
    assert value_error(SPECS["EPOCHS"], raw) == "Enter a whole number."


def test_an_int_value_with_surrounding_spaces_becomes_a_plain_number():
    assert coerce_value(SPECS["EPOCHS"], " 7 ") == 7


def test_a_float_value_is_coerced_and_checked_against_its_bounds():
    assert coerce_value(SPECS["RATE"], "0.25") == 0.25
    assert value_error(SPECS["RATE"], "1.5") == "The largest allowed value is 1.0."


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "1e999"])
def test_a_float_value_must_be_finite(raw):
    assert value_error(SPECS["RATE"], raw) == "Enter a finite number."


def test_a_choice_value_must_be_one_of_the_choices():
    assert coerce_value(SPECS["SIZE"], "large") == "large"
    assert value_error(SPECS["SIZE"], "Large") == "Choose one of: small, large."


def test_a_string_value_must_match_its_pattern():
    spec = validate_schema([{**NAME, "pattern": "[a-z]+"}])[0]
    assert coerce_value(spec, "abc") == "abc"
    assert value_error(spec, "abc1") == "The value must match the pattern [a-z]+."


def test_a_string_value_longer_than_200_characters_is_refused():
    assert value_error(SPECS["NAME"], "x" * 201) == "Use at most 200 characters."


@pytest.mark.parametrize(
    "raw", ["3\nid", "3; id", "$(id)", "3$(id)", "`id`", "3`id`", "#SBATCH --gres=gpu:8", "3\n#SBATCH --gres=gpu:8"]
)
def test_an_int_parameter_refuses_shell_and_slurm_tricks(raw):
    assert value_error(SPECS["EPOCHS"], raw) == "Enter a whole number."


@pytest.mark.parametrize(
    "raw",
    ["0.5\nid", "0.5; id", "$(id)", "0.5$(id)", "`id`", "0.5`id`", "#SBATCH --gres=gpu:8", "0.5\n#SBATCH --gres=gpu:8"],
)
def test_a_float_parameter_refuses_shell_and_slurm_tricks(raw):
    assert value_error(SPECS["RATE"], raw) == "Enter a number."


@pytest.mark.parametrize(
    "raw",
    [
        "small\n",
        "small\nid",
        "small; id",
        "$(id)",
        "small$(id)",
        "`id`",
        "small`id`",
        "#SBATCH --gres=gpu:8",
        "small\n#SBATCH --gres=gpu:8",
    ],
)
def test_a_choice_parameter_refuses_shell_and_slurm_tricks(raw):
    assert value_error(SPECS["SIZE"], raw) == "Choose one of: small, large."


@pytest.mark.parametrize("raw", NEWLINE_TRICKS)
def test_a_permissive_string_parameter_refuses_line_breaks_and_control_characters(raw):
    assert value_error(SPECS["NAME"], raw) == "Line breaks and other control characters are not allowed."


@pytest.mark.parametrize("raw", SHELL_TRICKS)
def test_a_permissive_string_parameter_accepts_shell_characters(raw):
    assert coerce_value(SPECS["NAME"], raw) == raw


def test_validate_values_fills_in_defaults_for_missing_values():
    assert validate_values(SCHEMA, {"EPOCHS": "9"}) == {"EPOCHS": 9, "RATE": 0.5, "SIZE": "small", "NAME": "run"}


def test_validate_values_refuses_unknown_parameter_names():
    with pytest.raises(ValidationError) as caught:
        validate_values(SCHEMA, {"EPOCHS": "9", "PATH": "/tmp"})
    assert caught.value.messages == ["Unknown parameters: PATH."]


def test_validate_values_reports_every_bad_value_by_name():
    with pytest.raises(ValidationError) as caught:
        validate_values(SCHEMA, {"EPOCHS": "$(id)", "SIZE": "huge", "NAME": "ok"})
    assert caught.value.message_dict == {
        "EPOCHS": ["Enter a whole number."],
        "SIZE": ["Choose one of: small, large."],
    }


def test_default_values_are_the_defaults_of_the_schema():
    assert default_values(SCHEMA) == {"EPOCHS": 5, "RATE": 0.5, "SIZE": "small", "NAME": "run"}


# ---- the script ----


def test_the_script_is_exactly_the_header_the_parameters_and_the_body():
    script = render_script(
        body=BODY, values=default_values(SCHEMA), resources=RESOURCES, dataset_path="/data/mnist", label="CS101: CNN"
    )
    assert script == (
        "#!/bin/bash\n"
        "#SBATCH --gres=gpu:2\n"
        "#SBATCH --nodes=1\n"
        "#SBATCH --ntasks=1\n"
        "#SBATCH --cpus-per-task=4\n"
        "#SBATCH --mem=8000M\n"
        "#SBATCH --time=01:30:00\n"
        "# CS101: CNN\n"
        "# Parameters, checked by the portal:\n"
        "export EPOCHS=5\n"
        "export RATE=0.5\n"
        "export SIZE=small\n"
        "export NAME=run\n"
        "export DATASET=/data/mnist\n"
        "# ---- assignment script ----\n"
        'python train.py --epochs "$EPOCHS" --name "$NAME"\n'
    )


def test_a_job_without_gpus_asks_slurm_for_none():
    script = render_script(body=BODY, values={}, resources=Resources(gpus=0, cpus=1, mem_mb=100, minutes=5))
    assert sbatch_lines(script) == [
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        "#SBATCH --mem=100M",
        "#SBATCH --time=00:05:00",
    ]


@pytest.mark.parametrize("raw", SHELL_TRICKS)
def test_a_string_value_with_shell_characters_appears_only_in_its_quoted_export_line(raw):
    values = validate_values(SCHEMA, {"NAME": raw})
    script = render_script(body=BODY, values=values, resources=RESOURCES)
    assert [line for line in script.splitlines() if raw in line] == [f"export NAME='{raw}'"]
    assert sbatch_lines(script) == EXPECTED_SBATCH


@pytest.mark.parametrize("raw", [*SHELL_TRICKS, "it's", "a 'quoted' word", "$HOME", "*"])
def test_bash_reads_back_exactly_the_value_and_runs_nothing(raw):
    values = validate_values(SCHEMA, {"NAME": raw})
    script = render_script(body='printf %s "$NAME"\n', values=values, resources=RESOURCES)
    ran = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10, check=True)
    assert ran.stdout == raw
    assert ran.stderr == ""


def test_a_dataset_path_is_shell_quoted():
    script = render_script(body=BODY, values={}, resources=RESOURCES, dataset_path="/data/my set; id")
    assert "export DATASET='/data/my set; id'" in script.splitlines()


def test_a_label_with_a_line_break_stays_one_comment_line():
    script = render_script(body=BODY, values={}, resources=RESOURCES, label="CS101: x\n#SBATCH --gres=gpu:8")
    assert sbatch_lines(script) == EXPECTED_SBATCH
    assert "# CS101: x #SBATCH --gres=gpu:8" in script.splitlines()


def test_render_script_refuses_a_body_with_sbatch_lines():
    with pytest.raises(ValidationError):
        render_script(body="#SBATCH --gres=gpu:8\n" + BODY, values={}, resources=RESOURCES)


# ---- the template body ----


@pytest.mark.parametrize(
    "body",
    [
        "#SBATCH --gres=gpu:8\necho hi\n",
        "echo hi\n#SBATCH --gres=gpu:8\n",
        "#sbatch --gres=gpu:8\n",
        "#SbAtCh --time=99:00:00\n",
        "   #SBATCH --gres=gpu:8\n",
        "\t#SBATCH --gres=gpu:8\n",
        "# SBATCH --gres=gpu:8\n",
        "#   sbatch --gres=gpu:8\n",
        "echo hi\r\n#SBATCH --gres=gpu:8\r\n",
    ],
)
def test_a_template_with_sbatch_lines_is_refused_pointing_to_the_resource_fields(body):
    with pytest.raises(ValidationError) as caught:
        validate_template(body)
    assert caught.value.messages == [
        "The script cannot contain #SBATCH lines: set GPUs, CPUs, memory and time in the resource fields "
        "of the assignment, and the portal writes them for you."
    ]


@pytest.mark.parametrize("body", ["#!/bin/bash\necho hi\n", "#!/usr/bin/env python3\nprint(1)\n", "\n  #!/bin/sh\n"])
def test_a_template_with_a_shebang_line_is_refused(body):
    with pytest.raises(ValidationError) as caught:
        validate_template(body)
    assert caught.value.messages == ["Leave out the #! line: the portal runs every script with /bin/bash."]


def test_a_template_with_a_nul_character_is_refused():
    with pytest.raises(ValidationError) as caught:
        validate_template("echo hi\x00\n")
    assert caught.value.messages == ["The script contains a NUL character."]


def test_a_template_that_only_mentions_sbatch_in_a_command_is_accepted():
    body = "echo 'resources: see #SBATCH lines above'\n# resources are set by the portal\n"
    assert validate_template(body) == body


def test_a_template_with_windows_line_endings_is_normalised():
    assert validate_template("echo a\r\necho b\r\n") == "echo a\necho b\n"


FLAG = {"name": "AUGMENT", "type": "bool", "default": "yes"}


def test_a_yes_no_parameter_is_normalised_to_true_or_false():
    (spec,) = validate_schema([FLAG])
    assert spec == {"name": "AUGMENT", "type": "bool", "help": "", "label": "", "default": True}


@pytest.mark.parametrize(
    "raw, value",
    [(True, True), (False, False), ("true", True), ("On", True), ("1", True), ("no", False), ("", False), ("0", False)],
)
def test_a_yes_no_value_reads_the_usual_words(raw, value):
    assert coerce_value({"type": "bool"}, raw) is value


@pytest.mark.parametrize("raw", ["maybe", "2", None, "truee"])
def test_a_yes_no_value_that_is_neither_is_refused(raw):
    with pytest.raises(ValidationError, match=r"Choose yes \(true\) or no \(false\)\."):
        coerce_value({"type": "bool"}, raw)


def test_a_yes_no_value_reaches_the_script_as_true_or_false():
    script = render_script(body="echo $A $B\n", values={"A": True, "B": False}, resources=Resources(0, 1, 100, 1))
    assert "export A=true\nexport B=false\n" in script
