"""The parameter editor: instructors add, reorder and remove parameters in a form (no JSON typed), see the exact
script and the students' form in the preview, get each problem on its field, and may still edit the JSON, which
round-trips with the editor. A yes/no parameter reaches the script as true or false."""

import html
import json

import pytest
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job, Status
from tests.conftest import dispatch, submit_form, wait_for_status
from tests.courses.test_assignment_edit import create_url, edit_url

BODY = 'echo "epochs=$EPOCHS size=$SIZE augment=$AUGMENT"\n'


def rows(*parameters: dict, extra: int = 0) -> dict:
    """The editor's POST data for these rows (and empty extra rows)."""
    data = {
        "param-TOTAL_FORMS": str(len(parameters) + extra),
        "param-INITIAL_FORMS": "0",
        "param-MIN_NUM_FORMS": "0",
        "param-MAX_NUM_FORMS": "30",
    }
    for number, parameter in enumerate(parameters):
        values = {"type": "int", "label": "", "default": "", "min": "", "max": "", "choices": "", "pattern": ""}
        values.update({"help": ""}, **parameter)
        data.update({f"param-{number}-{key}": value for key, value in values.items()})
    for number in range(len(parameters), len(parameters) + extra):
        data[f"param-{number}-type"] = "int"
    return data


def assignment_data(**overrides) -> dict:
    data = {
        "title": "Train a CNN",
        "slug": "cnn",
        "description": "",
        "script_template": BODY,
        "gpus": "1",
        "cpus": "1",
        "mem_mb": "500",
        "minutes": "5",
        "parameters": "",
        "parameters_shown": "",
    }
    data.update(overrides)
    return data


THREE = (
    {"name": "EPOCHS", "label": "Epochs", "type": "int", "default": "3", "min": "1", "max": "20", "help": "Passes"},
    {"name": "SIZE", "label": "Model size", "type": "choice", "default": "small", "choices": "small, large"},
    {"name": "AUGMENT", "label": "Augment the data", "type": "bool", "default": "true"},
)


def text(response) -> str:
    return html.unescape(response.content.decode())


def test_an_instructor_builds_an_assignment_with_three_parameters_without_typing_json(client, instructor, course):
    client.force_login(instructor)
    response = client.post(create_url(), {**assignment_data(save="1"), **rows(*THREE, extra=1)})
    assert response.status_code == 302, text(response)
    assignment = Assignment.objects.get(slug="cnn")
    assert [(p["name"], p["type"], p["label"], p["default"]) for p in assignment.parameters] == [
        ("EPOCHS", "int", "Epochs", 3),
        ("SIZE", "choice", "Model size", "small"),
        ("AUGMENT", "bool", "Augment the data", True),
    ]
    assert assignment.parameters[0]["min"] == 1 and assignment.parameters[0]["max"] == 20
    assert assignment.parameters[1]["choices"] == ["small", "large"]
    assert assignment.versions.count() == 1
    page = text(client.get(edit_url("cnn")))
    assert (
        'name="param-2-name" maxlength="32" required id="id_param-2-name" value="AUGMENT"' in page.replace('" ', '" ')
        or 'value="AUGMENT"' in page
    )


def test_the_preview_shows_the_exact_script_and_the_students_form(client, instructor, course):
    client.force_login(instructor)
    response = client.post(create_url(), {**assignment_data(preview="1"), **rows(*THREE)})
    page = text(response)
    assert "export EPOCHS=3\nexport SIZE=small\nexport AUGMENT=true\n" in page
    assert 'id="preview_param_AUGMENT" checked' in page and 'type="checkbox"' in page
    assert '<option value="large">large</option>' in page
    assert not Assignment.objects.exists(), "a preview saves nothing"
    raw = response.content.decode().split('name="parameters_shown" value="')[1].split('"')[0]
    shown = json.loads(html.unescape(raw))
    assert [p["name"] for p in shown] == ["EPOCHS", "SIZE", "AUGMENT"], "the JSON view follows the editor"


@pytest.mark.parametrize(
    "row, field, message",
    [
        ({"name": "EPOCHS", "default": "3", "min": "9", "max": "2"}, "min", "Min is greater than max."),
        ({"name": "2FAST", "default": "1"}, "name", "The name must be a shell variable name"),
        ({"name": "PATH", "default": "1"}, "name", "This name is reserved"),
        ({"name": "EPOCHS", "default": "many"}, "default", "The default is not valid: Enter a whole number."),
        ({"name": "SIZE", "type": "choice", "default": "s", "choices": ""}, "choices", "A choice needs a non-empty"),
        ({"name": "FLAG", "type": "bool", "default": "maybe"}, "default", "Choose yes (true) or no (false)."),
    ],
)
def test_an_invalid_entry_is_marked_on_its_field_and_nothing_is_saved(client, instructor, course, row, field, message):
    client.force_login(instructor)
    response = client.post(create_url(), {**assignment_data(save="1"), **rows(row)})
    assert response.status_code == 200
    page = text(response)
    assert "Please correct the problems marked below; nothing was saved." in page
    field_html = page.split(f'id="id_param-0-{field}"')[1].split('<div class="field">')[0]
    assert message in field_html, field_html
    assert not Assignment.objects.exists()


def test_two_parameters_with_one_name_are_refused(client, instructor, course):
    client.force_login(instructor)
    response = client.post(create_url(), {**assignment_data(save="1"), **rows(THREE[0], THREE[0])})
    assert "Two parameters are called EPOCHS: give each its own name." in text(response)
    assert not Assignment.objects.exists()


def test_parameters_are_reordered_and_removed_in_the_editor(client, instructor, course):
    client.force_login(instructor)
    data = {**assignment_data(save="1"), **rows(*THREE)}
    data.update({"param-0-ORDER": "2", "param-1-DELETE": "on", "param-2-ORDER": "1"})
    assert client.post(create_url(), data).status_code == 302
    assert [p["name"] for p in Assignment.objects.get().parameters] == ["AUGMENT", "EPOCHS"]


def test_add_a_parameter_gives_one_more_empty_row(client, instructor, course):
    client.force_login(instructor)
    page = text(client.post(create_url(), {**assignment_data(add_parameter="1"), **rows(*THREE)}))
    assert 'name="param-3-name"' in page and 'name="param-4-name"' not in page
    assert not Assignment.objects.exists()


def test_json_edited_by_hand_wins_and_the_editor_shows_it(client, instructor, course):
    client.force_login(instructor)
    edited = json.dumps([{"name": "BATCH", "type": "int", "default": 32, "min": 1, "max": 256}])
    data = {**assignment_data(preview="1", parameters=edited, parameters_shown="[]"), **rows(*THREE)}
    page = text(client.post(create_url(), data))
    assert 'value="BATCH"' in page and 'value="EPOCHS"' not in page
    assert "export BATCH=32" in page
    data["save"] = "1"
    assert client.post(create_url(), data).status_code == 302
    assert [p["name"] for p in Assignment.objects.get().parameters] == ["BATCH"]


def test_the_edit_page_shows_an_assignments_parameters_as_rows(client, instructor, assignment):
    client.force_login(instructor)
    page = text(client.get(edit_url()))
    for name in ("EPOCHS", "RATE", "SIZE", "NAME"):
        assert f'value="{name}"' in page
    assert 'value="small, large"' in page
    assert 'name="param-TOTAL_FORMS" value="5"' in page, "four rows and an empty one"


def test_a_yes_no_parameter_reaches_the_script_as_true_or_false(client, instructor, student, course):
    client.force_login(instructor)
    assert client.post(create_url(), {**assignment_data(save="1"), **rows(*THREE)}).status_code == 302
    client.force_login(student)
    form = {"param_EPOCHS": "2", "param_SIZE": "large", "gpus": "1", "cpus": "1", "mem_mb": "500", "minutes": "5"}
    assert client.post(reverse("jobs:assignment-detail", args=["cs101", "cnn"]), form).status_code == 302
    job = Job.objects.get()
    assert job.parameters == {"EPOCHS": 2, "SIZE": "large", "AUGMENT": False}, "an unticked box is no"
    assert "export AUGMENT=false\n" in job.script


@pytest.mark.slurm
def test_an_assignment_built_in_the_editor_runs(client, instructor, student, course):
    client.force_login(instructor)
    assert client.post(create_url(), {**assignment_data(save="1"), **rows(*THREE)}).status_code == 302
    client.force_login(student)
    form = {**submit_form(), "param_EPOCHS": "4", "param_SIZE": "small", "param_AUGMENT": "on"}
    for name in ("param_RATE", "param_NAME"):
        form.pop(name)
    assert client.post(reverse("jobs:assignment-detail", args=["cs101", "cnn"]), form).status_code == 302
    job = wait_for_status(dispatch(Job.objects.get()), Status.COMPLETED)
    output = client.get(reverse("jobs:job-status", args=[job.uuid])).content.decode()
    assert "epochs=4 size=small augment=true" in output
