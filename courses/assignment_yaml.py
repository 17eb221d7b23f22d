"""An assignment as a YAML file instructors keep in git: export, and an import that is previewed, checked with
the assignment form's own rules and applied whole or not at all. Web side (the instructor's pages).

The file holds what a course reuses from term to term: the script template, its parameters, the default
resources, the attempt cap, the late policy and the assignment's own hints. Dates, data sets and starter files
belong to a term and a cluster and stay out of it. Exporting, importing and exporting again gives the same bytes.

The parser takes plain YAML only: no anchors or aliases (a "billion laughs" file is refused before it is built),
no tags (nothing but strings, numbers, booleans, lists and mappings), one document, at most MAX_BYTES.
"""

import json
from dataclasses import dataclass, field

import yaml
from django.core.exceptions import ValidationError
from django.db import transaction

from courses.forms import ASSIGNMENT_FILE_MAX_BYTES as MAX_BYTES
from courses.forms import AssignmentForm, HintForm
from courses.models import Assignment, Course, Hint
from courses.scripting import is_unicode, validate_schema, validate_template
from courses.services import assignment_save

FORMAT = 1
#: LibYAML's safe loader (the PyYAML wheels bundle it). PyYAML's pure-Python scanner takes time that grows with the
#: square of the nesting: a 10 KB file of nested brackets held a web worker for 15 s. LibYAML reads it in
#: milliseconds and refuses more than 1000 levels.
LOADER = yaml.CSafeLoader
HEADER = "# A LabQueue assignment (export, keep in git, import into a course of a later term).\n"
TEXTS = ("title", "slug", "description", "script_template")
RESOURCES = ("gpus", "cpus", "mem_mb", "minutes")
SETTINGS = ("max_attempts", "late_policy", "grace_minutes", "interactive", "interactive_labs_only")
KEYS = ("labqueue", "title", "slug", "description", "script_template", "parameters", "resources", *SETTINGS, "hints")
HINT_KEYS = ("state", "pattern", "message")


class _Dumper(yaml.SafeDumper):
    """Multi-line text as literal blocks, so a script reads in the file as it does in the editor."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and value.strip(" \n") and not any(c in value for c in "\r\t") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def assignment_export(*, assignment: Assignment) -> str:
    """The assignment as YAML text."""
    hints = assignment.hints.order_by("created_at", "pk")
    document = {
        "labqueue": FORMAT,
        "title": assignment.title,
        "slug": assignment.slug,
        "description": assignment.description,
        "script_template": assignment.script_template,
        "parameters": _parameters(assignment.parameters),
        "resources": {name: getattr(assignment, name) for name in RESOURCES},
        **{name: getattr(assignment, name) for name in SETTINGS},
        "hints": [{key: getattr(hint, key) for key in HINT_KEYS} for hint in hints],
    }
    return HEADER + yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)


def _parameters(schema: list) -> list:
    """The schema as the assignment form saves it (every key, in one order), so that an assignment made
    elsewhere (the admin, an older release) exports as it will import."""
    try:
        return validate_schema(schema)
    except ValidationError:
        return schema


@dataclass
class ImportPlan:
    """What an import would do: create or update which assignment, with how many hints; or why it cannot."""

    errors: list[str] = field(default_factory=list)
    fields: dict = field(default_factory=dict)
    hints: list[dict] = field(default_factory=list)
    existing: Assignment | None = None
    form: AssignmentForm | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def _refuse_hostile(text: str) -> None:
    """Plain YAML only: an anchor, an alias or a tag anywhere refuses the file, before anything is built."""
    for event in yaml.parse(text, Loader=LOADER):
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise ValidationError(f"Line {line}: anchors and aliases (& and *) are not accepted in an assignment file.")
        if getattr(event, "tag", None):
            raise ValidationError(f"Line {line}: tags (such as {event.tag}) are not accepted in an assignment file.")


def _document(text: str) -> tuple[dict, dict[str, int]]:
    """The file's mapping and the line of each top-level key."""
    if len(text.encode()) > MAX_BYTES:
        raise ValidationError(f"The file is larger than {MAX_BYTES // 1024} KB; an assignment file is much smaller.")
    try:
        _refuse_hostile(text)
        node = yaml.compose(text, Loader=LOADER)
        document = yaml.load(text, Loader=LOADER)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"Line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ValidationError(f"{where}this is not valid YAML ({error.problem or error.context}).")
    except (yaml.YAMLError, RecursionError):
        raise ValidationError("This is not a YAML file LabQueue can read (one document, nested at most a few levels).")
    if not is_unicode(document):
        raise ValidationError("The file holds a \\u escape of half a surrogate pair, which is not a character.")
    if not isinstance(document, dict):
        raise ValidationError("The file must be a mapping of keys (title, slug, script_template, ...).")
    lines = {key.value: key.start_mark.line + 1 for key, _ in node.value if isinstance(key, yaml.ScalarNode)}
    return document, lines


def _at(lines: dict[str, int], key: str) -> str:
    return f"Line {lines[key]} ({key})" if key in lines else key


def assignment_import_plan(*, course: Course, text: str) -> ImportPlan:
    """Read and check a file against the course as the assignment form would; nothing is saved."""
    plan = ImportPlan()
    try:
        document, lines = _document(text)
    except ValidationError as error:
        plan.errors = error.messages
        return plan
    plan.errors = _shape_errors(document, lines)
    if plan.errors:
        return plan
    data = _form_data(document)
    plan.existing = course.assignments.filter(slug=data["slug"]).first()
    data.update(_kept(plan.existing))
    plan.form = AssignmentForm(data, course=course, instance=plan.existing or Assignment(course=course))
    if not plan.form.is_valid():
        plan.errors += _form_errors(plan.form, document, lines)
    for number, hint in enumerate(document.get("hints") or [], start=1):
        cleaned, errors = _hint_checked(hint, course=course, where=f"{_at(lines, 'hints')}, hint {number}")
        plan.hints.append(cleaned)
        plan.errors += errors
    if plan.ok:
        plan.fields = _import_fields(plan.form, document)
    return plan


def _shape_errors(document: dict, lines: dict[str, int]) -> list[str]:
    """What keeps the file from being read as an assignment at all: its format, unknown keys, values of the
    wrong kind."""
    errors = []
    if document.get("labqueue") != FORMAT:
        errors.append(f"{_at(lines, 'labqueue')}: this is not a LabQueue assignment file (labqueue: {FORMAT}).")
    errors += [f"{_at(lines, key)}: unknown key." for key in document if key not in KEYS]
    errors += [f"{_at(lines, key)}: give text here." for key in TEXTS if not isinstance(document.get(key) or "", str)]
    resources = document.get("resources")
    if not isinstance(resources, dict) or set(resources) != set(RESOURCES):
        errors.append(f"{_at(lines, 'resources')}: give {', '.join(RESOURCES)} (and nothing else).")
    hints = document.get("hints") or []
    if not isinstance(hints, list) or not all(isinstance(h, dict) and set(h) <= set(HINT_KEYS) for h in hints):
        errors.append(f"{_at(lines, 'hints')}: a list of hints, each with state, pattern and message.")
    return errors


def _form_data(document: dict) -> dict[str, str]:
    """The file as the assignment form's POST data (its shape already checked)."""
    data = {key: _form_value(document.get(key)) for key in TEXTS}
    data["parameters"] = json.dumps(document.get("parameters") or [])
    data.update({key: _form_value(value) for key, value in document["resources"].items()})
    data.update({key: _form_value(document.get(key)) for key in SETTINGS})
    return data


def _kept(existing: Assignment | None) -> dict[str, str]:
    """What the file does not hold, as the existing assignment has it (its dates and check)."""
    if existing is None:
        return {}
    kept = {"check_script": existing.check_script}
    for name in ("opens_at", "due_at"):
        moment = getattr(existing, name)
        kept[name] = moment.isoformat() if moment else ""
    return kept


def _form_errors(form: AssignmentForm, document: dict, lines: dict[str, int]) -> list[str]:
    """The form's errors, each at the line of the file's key it comes from (a resource's at "resources")."""
    errors = []
    for name, messages in form.errors.items():
        key = name if name in document else "resources" if name in RESOURCES else name
        errors += [f"{_at(lines, key)}: {message}" for message in messages]
    return errors


def _hint_checked(hint: dict, *, course: Course, where: str) -> tuple[dict, list[str]]:
    """A hint of the file as the hint form cleans it, and the form's errors, each said `where` the hint is."""
    form = HintForm({key: _form_value(hint.get(key)) for key in HINT_KEYS}, course=course)
    form.is_valid()
    problems = {name: errors for name, errors in form.errors.items() if name != "assignment"}
    errors = [f"{where}: {message}" for messages in problems.values() for message in messages]
    return {key: form.cleaned_data.get(key, "") for key in HINT_KEYS}, errors


def _import_fields(form: AssignmentForm, document: dict) -> dict:
    """The assignment's fields to save: the form's cleaned data, but its texts exactly as the file has them."""
    fields = {k: v for k, v in form.cleaned_data.items() if k not in ("datasets", "starter_file")}
    # The form trims the texts' ends; keep them, with line ends made Unix ones.
    fields["script_template"] = validate_template(document["script_template"])
    fields["description"] = (document.get("description") or "").replace("\r\n", "\n")
    return fields


def _form_value(value) -> str:
    """A YAML value as a browser would send it in the assignment form."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "on" if value else ""
    return str(value)


@transaction.atomic
def assignment_import(*, course: Course, text: str, actor) -> Assignment:
    """Apply a file whole (the assignment, a new version if its script changed, and its own hints), or nothing."""
    plan = assignment_import_plan(course=course, text=text)
    if not plan.ok:
        raise ValidationError(plan.errors)
    datasets = list(plan.existing.datasets.all()) if plan.existing else []
    saved = assignment_save(course=course, fields=plan.fields, datasets=datasets, assignment=plan.existing, actor=actor)
    Hint.objects.filter(course=course, assignment=saved).delete()
    Hint.objects.bulk_create(Hint(course=course, assignment=saved, **hint) for hint in plan.hints)
    return saved
