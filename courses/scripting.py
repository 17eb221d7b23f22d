"""Assignment templates: the parameter schema, parameter values, and the batch script.

The portal writes every `#SBATCH` line itself from validated resources. Parameter values
reach the script only as shell-quoted variable assignments, so no value can change the
script's structure, and template bodies may not carry `#SBATCH` lines of their own.
"""

import difflib
import json
import math
import re
import shlex
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from courses.patterns import PatternTooSlow, pattern_fullmatch, pattern_problem

PARAMETER_TYPES = ("int", "float", "choice", "string", "bool")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
RESERVED_NAMES = {
    "BASH_ENV",
    "CDPATH",
    "DATASET",
    "ENV",
    "HOME",
    "IFS",
    "LANG",
    "LOGNAME",
    "PATH",
    "PS4",
    "PWD",
    "SHELL",
    "SHELLOPTS",
    "TMPDIR",
    "USER",
}
RESERVED_PREFIXES = ("SLURM_", "LD_", "BASH_", "CUDA_", "LABQUEUE_")
SBATCH_LINE_RE = re.compile(r"^\s*#\s*SBATCH", re.IGNORECASE | re.MULTILINE)
MAX_STRING_LENGTH = 200
MAX_PATTERN_LENGTH = 200
MAX_PARAMETERS = 30
# Files the portal itself writes in every job directory; no upload may take these names.
SCRIPT_NAME, STDOUT_NAME, STDERR_NAME = "job.sh", "job.out", "job.err"
PORTAL_FILE_NAMES = (SCRIPT_NAME, STDOUT_NAME, STDERR_NAME)
# Where an interactive session's job writes its notebook server's address and key (jobs.sessions); no upload
# takes it, as no upload's name starts with a dot.
SESSION_FILE_NAME = ".labqueue-session.json"
# The line after which a rendered script holds the assignment's template body.
BODY_MARKER = "# ---- assignment script ----"
# The line before the parameters; only the parameters (one line each) lie between it and BODY_MARKER.
PARAMETERS_LINE = "# Parameters, checked by the portal:"
# The line after which the portal's own part follows the template body (an interactive session's launcher).
EPILOGUE_MARKER = "# ---- written by the portal ----"


@dataclass(frozen=True)
class Resources:
    gpus: int
    cpus: int
    mem_mb: int
    minutes: int

    def as_dict(self) -> dict[str, int]:
        return {"gpus": self.gpus, "cpus": self.cpus, "mem_mb": self.mem_mb, "minutes": self.minutes}


def is_unicode(data) -> bool:
    """Every text in `data` (what JSON or YAML gave) is one UTF-8 can hold: their \\u escapes can carry half of a
    surrogate pair, which is no character, and PostgreSQL refuses it."""
    try:
        json.dumps(data, ensure_ascii=False, default=str).encode()
    except UnicodeEncodeError:
        return False
    return True


def _is_safe_text(value: str) -> bool:
    return not any(ord(ch) < 32 or ord(ch) == 127 for ch in value)


def _number(spec: dict, key: str, kind: type) -> int | float | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"Parameter '{spec.get('name')}': '{key}' must be a number.")
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValidationError(f"Parameter '{spec.get('name')}': '{key}' must be a whole number.")
    try:
        return kind(value)
    except OverflowError:  # a JSON integer beyond the range of a float
        raise ValidationError(f"Parameter '{spec.get('name')}': '{key}' is too large a number.")


def validate_schema(schema: object) -> list[dict]:
    """Check a parameter schema (a list of parameter definitions) and return it normalised."""
    if not isinstance(schema, list):
        raise ValidationError("Parameters must be a list of parameter definitions.")
    if not is_unicode(schema):
        raise ValidationError("The parameters hold a character that is not valid Unicode (half of a surrogate pair).")
    if len(schema) > MAX_PARAMETERS:
        raise ValidationError(f"An assignment can have at most {MAX_PARAMETERS} parameters.")
    seen: set[str] = set()
    normalised = []
    for position, spec in enumerate(schema, start=1):
        name = _parameter_name(spec, position=position, seen=seen)
        seen.add(name)
        kind = spec.get("type")
        if kind not in PARAMETER_TYPES:
            raise ValidationError(f"Parameter '{name}': the type must be one of {', '.join(PARAMETER_TYPES)}.")
        unknown = set(spec) - {"name", "type", "default", "min", "max", "choices", "pattern", "help", "label"}
        if unknown:
            raise ValidationError(f"Parameter '{name}': unknown keys {', '.join(sorted(unknown))}.")
        clean = {"name": name, "type": kind, "help": str(spec.get("help", "")), "label": str(spec.get("label", ""))}
        clean.update(_type_rules(spec, name=name, kind=kind))
        if "default" not in spec:
            raise ValidationError(f"Parameter '{name}': a default value is required.")
        try:
            clean["default"] = coerce_value(clean, spec["default"])
        except ValidationError as error:
            raise ValidationError(f"Parameter '{name}': the default is not valid: {error.messages[0]}")
        normalised.append(clean)
    return normalised


def _parameter_name(spec: object, *, position: int, seen: set[str]) -> str:
    """The name of the parameter at `position`: a shell variable name, not reserved, not used before."""
    if not isinstance(spec, dict):
        raise ValidationError(f"Parameter {position} must be an object with a name and a type.")
    name = spec.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ValidationError(
            f"Parameter {position}: the name must be a shell variable name "
            "(letters, digits and '_', not starting with a digit, at most 32 characters)."
        )
    if name.upper() in RESERVED_NAMES or name.upper().startswith(RESERVED_PREFIXES):
        raise ValidationError(f"Parameter '{name}': this name is reserved by the shell, Slurm or the portal.")
    if name in seen:
        raise ValidationError(f"Parameter '{name}' is defined twice.")
    return name


def _type_rules(spec: dict, *, name: str, kind: str) -> dict:
    """What the parameter's type adds: min and max of a number, the choices, or a text's pattern."""
    if kind in ("int", "float"):
        number_type = int if kind == "int" else float
        low, high = _number(spec, "min", number_type), _number(spec, "max", number_type)
        if low is not None and high is not None and low > high:
            raise ValidationError(f"Parameter '{name}': min is greater than max.")
        return {"min": low, "max": high}
    if kind == "choice":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ValidationError(f"Parameter '{name}': a choice needs a non-empty list of choices.")
        for choice in choices:
            if not isinstance(choice, str) or not choice or len(choice) > MAX_STRING_LENGTH:
                raise ValidationError(f"Parameter '{name}': every choice must be a short non-empty text.")
            if not _is_safe_text(choice):
                raise ValidationError(f"Parameter '{name}': choices cannot contain control characters.")
        return {"choices": list(choices)}
    if kind == "bool":
        return {}
    pattern = spec.get("pattern", "")
    if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_LENGTH:
        raise ValidationError(f"Parameter '{name}': the pattern must be at most {MAX_PATTERN_LENGTH} characters.")
    if pattern and (problem := pattern_problem(pattern, whole=True)):
        raise ValidationError(f"Parameter '{name}': {problem[0].lower()}{problem[1:]}")
    return {"pattern": pattern}


BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def coerce_value(spec: dict, raw: object) -> int | float | str | bool:
    """Turn a submitted value into the parameter's type, or raise ValidationError."""
    kind = spec["type"]
    if kind == "bool":
        return _yes_or_no(raw)
    if kind == "int":
        return _within_bounds(spec, _whole_number(raw))
    if kind == "float":
        return _within_bounds(spec, _finite_number(raw))
    if kind == "choice":
        return _one_of_the_choices(spec, raw)
    return _short_text(spec, raw)


def _yes_or_no(raw: object) -> bool:
    """A box's value: True, False, or a word for one of them; an unticked box sends nothing, and "" is no."""
    word = raw if isinstance(raw, bool) else BOOL_WORDS.get(str(raw).strip().lower() or "false")
    if word is None:
        raise ValidationError("Choose yes (true) or no (false).")
    return word


def _whole_number(raw: object) -> int:
    if isinstance(raw, bool):
        raise ValidationError("Enter a whole number.")
    try:
        return int(str(raw).strip()) if not isinstance(raw, int) else raw
    except ValueError:
        raise ValidationError("Enter a whole number.")


def _finite_number(raw: object) -> float:
    if isinstance(raw, bool):
        raise ValidationError("Enter a number.")
    try:
        value = float(str(raw).strip()) if not isinstance(raw, (int, float)) else float(raw)
    except ValueError:
        raise ValidationError("Enter a number.")
    except OverflowError:  # a JSON integer beyond the range of a float (typed "1e999" reads as infinity)
        raise ValidationError("Enter a finite number.")
    if not math.isfinite(value):
        raise ValidationError("Enter a finite number.")
    return value


def _within_bounds(spec: dict, value: int | float) -> int | float:
    """The number, if it lies within the parameter's min and max (either may be None: no bound)."""
    if spec.get("min") is not None and value < spec["min"]:
        raise ValidationError(f"The smallest allowed value is {spec['min']}.")
    if spec.get("max") is not None and value > spec["max"]:
        raise ValidationError(f"The largest allowed value is {spec['max']}.")
    return value


def _one_of_the_choices(spec: dict, raw: object) -> str:
    value = str(raw)
    if value not in spec["choices"]:
        raise ValidationError(f"Choose one of: {', '.join(spec['choices'])}.")
    return value


def _short_text(spec: dict, raw: object) -> str:
    """A string parameter's value: one line of at most MAX_STRING_LENGTH characters, matching its pattern if any."""
    value = str(raw)
    if len(value) > MAX_STRING_LENGTH:
        raise ValidationError(f"Use at most {MAX_STRING_LENGTH} characters.")
    if not _is_safe_text(value):
        raise ValidationError("Line breaks and other control characters are not allowed.")
    if not is_unicode(value):
        raise ValidationError("The text holds a character that is not valid Unicode (half of a surrogate pair).")
    if spec.get("pattern") and not _matches(spec["pattern"], value):
        raise ValidationError(f"The value must match the pattern {spec['pattern']}.")
    return value


def _matches(pattern: str, value: str) -> bool:
    """The whole value matches the pattern, checked with a time bound (courses.patterns)."""
    try:
        return pattern_fullmatch(pattern, value)
    except PatternTooSlow:
        raise ValidationError(
            "This value takes too long to check against the assignment's pattern, which backtracks badly. "
            "Use a shorter or simpler value, and tell your instructor so they can simplify the pattern."
        )


def validate_values(schema: list[dict], raw_values: dict) -> dict:
    """Validate every parameter value against the schema; unknown names are refused."""
    unknown = set(raw_values) - {spec["name"] for spec in schema}
    if unknown:
        raise ValidationError(f"Unknown parameters: {', '.join(sorted(unknown))}.")
    values, errors = {}, {}
    for spec in schema:
        try:
            values[spec["name"]] = coerce_value(spec, raw_values.get(spec["name"], spec["default"]))
        except ValidationError as error:
            errors[spec["name"]] = error.messages
    if errors:
        raise ValidationError(errors)
    return values


def default_values(schema: list[dict]) -> dict:
    return {spec["name"]: spec["default"] for spec in schema}


def validate_template(body: str) -> str:
    """Refuse template bodies that would set their own resources or interpreter."""
    if SBATCH_LINE_RE.search(body):
        raise ValidationError(
            "The script cannot contain #SBATCH lines: set GPUs, CPUs, memory and time in the "
            "resource fields of the assignment, and the portal writes them for you."
        )
    if body.lstrip().startswith("#!"):
        raise ValidationError("Leave out the #! line: the portal runs every script with /bin/bash.")
    if "\x00" in body:
        raise ValidationError("The script contains a NUL character.")
    if EPILOGUE_MARKER in body.splitlines():
        raise ValidationError(f"The line '{EPILOGUE_MARKER}' is the portal's own: remove it from the script.")
    return body.replace("\r\n", "\n")


def format_minutes(minutes: int) -> str:
    hours, mins = divmod(minutes, 60)
    return f"{hours:02d}:{mins:02d}:00"


def render_script(
    *, body: str, values: dict, resources: Resources, dataset_path: str = "", label: str = "", epilogue: str = ""
) -> str:
    """The exact batch script the portal submits. Only the portal writes #SBATCH lines.

    `epilogue` is the portal's own script part after the template body (never an instructor's text)."""
    lines = ["#!/bin/bash"]
    if resources.gpus:
        lines.append(f"#SBATCH --gres=gpu:{resources.gpus}")
    lines += [
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        f"#SBATCH --cpus-per-task={resources.cpus}",
        f"#SBATCH --mem={resources.mem_mb}M",
        f"#SBATCH --time={format_minutes(resources.minutes)}",
    ]
    if label:
        lines.append(f"# {_comment_safe(label)}")
    lines.append(PARAMETERS_LINE)
    for name, value in values.items():
        lines.append(f"export {name}={shlex.quote(shell_value(value))}")
    if dataset_path:
        lines.append(f"export DATASET={shlex.quote(dataset_path)}")
    lines.append(BODY_MARKER)
    lines.append(validate_template(body).rstrip("\n"))
    if epilogue:
        lines += [EPILOGUE_MARKER, epilogue.rstrip("\n")]
    return "\n".join(lines) + "\n"


def shell_value(value: object) -> str:
    """A parameter's value as the script reads it: yes/no parameters are `true` or `false`."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def script_body(script: str) -> str | None:
    """The assignment template body inside a script render_script wrote, or None when it holds none.

    The marker is looked for after the parameters line: a label before it may read like the marker."""
    _head, parameters, rest = script.partition(f"\n{PARAMETERS_LINE}\n")
    if not parameters:
        return None
    _exports, marker, body = f"\n{rest}".partition(f"\n{BODY_MARKER}\n")
    if not marker:
        return None
    body, _marker, _epilogue = f"\n{body}".partition(f"\n{EPILOGUE_MARKER}\n")
    return body[1:]  # a template line never equals the marker (validate_template)


def _comment_safe(text: str) -> str:
    return "".join(ch if _is_safe_text(ch) else " " for ch in text)


def script_diff(old: str, new: str, *, old_label: str, new_label: str) -> str:
    """A unified diff of two template bodies, for course staff (render it escaped)."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), fromfile=old_label, tofile=new_label, lineterm="")
    return "\n".join(lines)
