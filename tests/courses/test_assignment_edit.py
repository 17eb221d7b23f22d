"""Instructors write assignments in the browser: script, parameters, resources, starter files."""

import html
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Assignment, Role, StarterFile
from tests.conftest import PARAMETERS, make_user

BODY = 'python train.py --epochs "$EPOCHS" --size "$SIZE"\n'
SCHEMA = [
    {"name": "EPOCHS", "type": "int", "default": 3, "min": 1, "max": 20, "help": "Training epochs"},
    {"name": "SIZE", "type": "choice", "choices": ["small", "large"], "default": "small"},
]
EXPECTED_PREVIEW = """\
#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=2
#SBATCH --mem=2000M
#SBATCH --time=00:20:00
# CS101: Train a CNN
# Parameters, checked by the portal:
export EPOCHS=3
export SIZE=small
# ---- assignment script ----
python train.py --epochs "$EPOCHS" --size "$SIZE"
"""
SBATCH_REFUSED = (
    "The script cannot contain #SBATCH lines: set GPUs, CPUs, memory and time in the resource fields "
    "of the assignment, and the portal writes them for you."
)


@pytest.fixture
def other_instructor(other_course):
    """Teaches another course only."""
    user = make_user("instructor2", "instructor2")
    other_course.enrollments.create(user=user, role=Role.INSTRUCTOR)
    return user


def create_url() -> str:
    return reverse("courses:assignment-create", args=["cs101"])


def edit_url(slug: str = "hello") -> str:
    return reverse("courses:assignment-edit", args=["cs101", slug])


def form_data(**overrides) -> dict:
    data = {
        "title": "Train a CNN",
        "slug": "cnn",
        "description": "Train a small CNN.",
        "script_template": BODY,
        "parameters": json.dumps(SCHEMA),
        "gpus": "1",
        "cpus": "2",
        "mem_mb": "2000",
        "minutes": "20",
        "save": "1",
    }
    data.update(overrides)
    return data


def page_text(response) -> str:
    return html.unescape(response.content.decode())


def preview_of(response) -> str:
    match = re.search(r"<pre[^>]*>(.*?)</pre>", response.content.decode(), re.DOTALL)
    assert match, "the page shows a script preview"
    return html.unescape(match.group(1))


# ---- creating ----


def test_an_instructor_creates_an_assignment_and_lands_on_its_page(client, instructor):
    client.force_login(instructor)
    response = client.post(create_url(), form_data())
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:assignment-detail", args=["cs101", "cnn"])
    assignment = Assignment.objects.get()
    assert (assignment.course.slug, assignment.slug, assignment.title) == ("cs101", "cnn", "Train a CNN")
    assert assignment.script_template == BODY.rstrip("\n")
    assert assignment.default_resources == {"gpus": 1, "cpus": 2, "mem_mb": 2000, "minutes": 20}
    assert assignment.parameters == [
        {**SCHEMA[0], "label": ""},
        {**SCHEMA[1], "help": "", "label": ""},
    ]


def test_the_new_assignment_page_shows_the_exact_script_for_the_defaults(client, instructor):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(), follow=True)
    assert "Saved “Train a CNN”" in page_text(response)
    assert preview_of(response) == EXPECTED_PREVIEW


def test_the_new_assignment_form_shows_the_course_limits(client, instructor):
    client.force_login(instructor)
    response = client.get(create_url())
    assert response.status_code == 200
    assert "Course limits per job: 2 GPUs, 4 CPUs, 4000 MB, 30 minutes." in page_text(response)


def test_preview_shows_the_exact_script_without_saving(client, instructor):
    client.force_login(instructor)
    data = form_data(preview="1")
    del data["save"]
    response = client.post(create_url(), data)
    assert response.status_code == 200
    assert "Not saved yet." in page_text(response)
    assert preview_of(response) == EXPECTED_PREVIEW
    assert not Assignment.objects.exists()


def test_preview_of_an_existing_assignment_leaves_it_unchanged(client, instructor, assignment):
    client.force_login(instructor)
    data = form_data(slug="hello", title="Renamed", minutes="25", preview="1")
    del data["save"]
    response = client.post(edit_url(), data)
    assert response.status_code == 200
    assert "# CS101: Renamed" in preview_of(response)
    assert "#SBATCH --time=00:25:00" in preview_of(response)
    assignment.refresh_from_db()
    assert (assignment.title, assignment.minutes) == ("Hello GPU", 5)


def test_a_chosen_dataset_is_saved_and_exported_in_the_preview(client, instructor, dataset):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(datasets=[dataset.pk]), follow=True)
    assignment = Assignment.objects.get()
    assert list(assignment.datasets.all()) == [dataset]
    assert f"export DATASET={dataset.path}\n" in preview_of(response)


# ---- refused ----


@pytest.mark.parametrize(
    "template", ["#SBATCH --gres=gpu:8\n" + BODY, BODY + "  # sbatch --time=48:00:00\n"], ids=["first", "later"]
)
def test_a_template_with_sbatch_lines_is_refused_pointing_to_the_resource_fields(client, instructor, template):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(script_template=template))
    assert response.status_code == 200
    assert SBATCH_REFUSED in page_text(response)
    assert "Please correct the problems marked below; nothing was saved." in page_text(response)
    assert not Assignment.objects.exists()


def test_a_template_with_a_shebang_line_is_refused(client, instructor):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(script_template="#!/bin/sh\n" + BODY))
    assert "Leave out the #! line: the portal runs every script with /bin/bash." in page_text(response)
    assert not Assignment.objects.exists()


def test_parameters_that_are_not_json_show_the_line_and_column(client, instructor):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(parameters='[\n  {"name": "EPOCHS" "type": "int"}\n]'))
    assert response.status_code == 200
    assert "This is not valid JSON: Expecting ',' delimiter at line 2, column 21." in page_text(response)
    assert not Assignment.objects.exists()


def test_an_invalid_parameter_schema_is_explained(client, instructor):
    client.force_login(instructor)
    schema = [{"name": "PATH", "type": "string", "default": "x"}]
    response = client.post(create_url(), form_data(parameters=json.dumps(schema)))
    assert "Parameter 'PATH': this name is reserved by the shell, Slurm or the portal." in page_text(response)
    assert not Assignment.objects.exists()


def test_a_number_too_large_for_a_float_in_the_parameters_is_explained_not_a_server_error(client, instructor):
    client.force_login(instructor)
    huge = "1" + "0" * 400  # JSON reads it as an integer that no float can hold
    parameters = f'[{{"name": "RATE", "type": "float", "default": 0.5, "max": {huge}}}]'
    response = client.post(create_url(), form_data(parameters=parameters))
    assert response.status_code == 200
    assert "Parameter 'RATE': 'max' is too large a number." in page_text(response)
    assert not Assignment.objects.exists()


def test_empty_parameters_mean_no_parameters(client, instructor):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(parameters="", script_template="nvidia-smi\n"))
    assert response.status_code == 302
    assert Assignment.objects.get().parameters == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gpus", "3", "This course allows at most 2 GPUs per job; the assignment asks for 3."),
        ("cpus", "5", "This course allows at most 4 CPUs per job; the assignment asks for 5."),
        ("mem_mb", "4001", "This course allows at most 4000 MB of memory per job; the assignment asks for 4001 MB."),
        ("minutes", "31", "This course allows at most 30 minutes per job; the assignment asks for 31."),
    ],
)
def test_resources_above_the_course_limits_are_refused_naming_the_limit(client, instructor, field, value, message):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(**{field: value}))
    assert response.status_code == 200
    assert message in page_text(response)
    assert not Assignment.objects.exists()


def test_a_slug_already_used_in_the_course_is_refused(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(slug="hello"))
    assert response.status_code == 200
    assert "Another assignment of this course already uses this short name." in page_text(response)
    assert Assignment.objects.count() == 1


def test_a_slug_used_in_another_course_is_fine(client, instructor, other_course):
    Assignment.objects.create(course=other_course, slug="cnn", title="Theirs", script_template="true\n")
    client.force_login(instructor)
    response = client.post(create_url(), form_data())
    assert response.status_code == 302
    assert Assignment.objects.filter(slug="cnn").count() == 2


def test_a_dataset_of_another_course_cannot_be_chosen(client, instructor, other_course):
    theirs = other_course.datasets.create(name="Private", path="/data/private")
    client.force_login(instructor)
    response = client.post(create_url(), form_data(datasets=[theirs.pk]))
    assert response.status_code == 200
    assert f"Select a valid choice. {theirs.pk} is not one of the available choices." in page_text(response)
    assert not Assignment.objects.exists()


# ---- editing ----


def test_the_edit_page_shows_the_current_parameters_as_json(client, instructor, assignment):
    client.force_login(instructor)
    response = client.get(edit_url())
    assert response.status_code == 200
    textarea = re.search(r'<textarea name="parameters"[^>]*>(.*?)</textarea>', response.content.decode(), re.DOTALL)
    assert json.loads(html.unescape(textarea.group(1))) == PARAMETERS


def test_an_instructor_edits_an_existing_assignment(client, instructor, assignment):
    client.force_login(instructor)
    data = form_data(slug="hello", title="Hello again", minutes="15", parameters=json.dumps(PARAMETERS))
    response = client.post(edit_url(), data)
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:assignment-detail", args=["cs101", "hello"])
    assignment.refresh_from_db()
    assert (assignment.title, assignment.minutes, assignment.script_template) == ("Hello again", 15, BODY.rstrip("\n"))
    assert Assignment.objects.count() == 1


def test_an_instructor_renames_the_slug_of_an_assignment(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(edit_url(), form_data(slug="hello-v2"))
    assert response["Location"] == reverse("jobs:assignment-detail", args=["cs101", "hello-v2"])
    assignment.refresh_from_db()
    assert assignment.slug == "hello-v2"


def test_renaming_to_the_slug_of_another_assignment_is_refused(client, instructor, assignment, course):
    Assignment.objects.create(course=course, slug="cnn", title="Other", script_template="true\n")
    client.force_login(instructor)
    response = client.post(edit_url(), form_data(slug="cnn"))
    assert "Another assignment of this course already uses this short name." in page_text(response)
    assignment.refresh_from_db()
    assert assignment.slug == "hello"


def test_a_refused_edit_leaves_the_assignment_unchanged(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(edit_url(), form_data(slug="hello", gpus="3"))
    assert response.status_code == 200
    assignment.refresh_from_db()
    assert (assignment.title, assignment.gpus) == ("Hello GPU", 1)


def test_a_refused_edit_keeps_the_saved_title_in_the_heading(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(edit_url(), form_data(slug="hello", title="Not saved", gpus="3"))
    assert "Edit “Hello GPU”" in page_text(response)
    assert "Edit “Not saved”" not in page_text(response)


def test_a_preview_keeps_the_saved_title_in_the_heading(client, instructor, assignment):
    client.force_login(instructor)
    data = form_data(slug="hello", title="Not saved", preview="1")
    del data["save"]
    response = client.post(edit_url(), data)
    assert "Edit “Hello GPU”" in page_text(response)


# ---- starter files ----


def test_a_starter_file_is_stored_and_listed(client, instructor, assignment):
    client.force_login(instructor)
    upload = SimpleUploadedFile("train.csv", b"x,y\n1,2\n")
    response = client.post(edit_url(), form_data(slug="hello", starter_file=upload))
    assert response.status_code == 302
    starter = StarterFile.objects.get(assignment=assignment)
    assert starter.name == "train.csv"
    with starter.file.open("rb") as stored:
        assert stored.read() == b"x,y\n1,2\n"
    assert "Starter files: train.csv" in page_text(client.get(edit_url()))


def test_a_starter_file_can_come_with_a_new_assignment(client, instructor):
    client.force_login(instructor)
    response = client.post(create_url(), form_data(starter_file=SimpleUploadedFile("model.py", b"print(1)\n")))
    assert response.status_code == 302
    assert [starter.name for starter in Assignment.objects.get().starter_files.all()] == ["model.py"]


def test_uploading_a_starter_file_with_the_same_name_replaces_it(client, instructor, assignment):
    client.force_login(instructor)
    client.post(edit_url(), form_data(slug="hello", starter_file=SimpleUploadedFile("train.csv", b"old\n")))
    client.post(edit_url(), form_data(slug="hello", starter_file=SimpleUploadedFile("train.csv", b"new\n")))
    starter = StarterFile.objects.get(assignment=assignment)
    with starter.file.open("rb") as stored:
        assert stored.read() == b"new\n"


def test_a_starter_file_above_the_upload_limit_is_refused(client, instructor, assignment, settings):
    settings.LABQUEUE_UPLOAD_MAX_BYTES = 10
    client.force_login(instructor)
    upload = SimpleUploadedFile("big.bin", b"x" * 11)
    response = client.post(edit_url(), form_data(slug="hello", starter_file=upload))
    assert "Starter files are limited to 10 bytes." in page_text(response)
    assert not StarterFile.objects.exists()


@pytest.mark.parametrize("name", ["job.sh", "job.out", "job.err"])
def test_a_starter_file_cannot_take_the_name_of_a_file_the_portal_writes(client, instructor, assignment, name):
    client.force_login(instructor)
    upload = SimpleUploadedFile(name, b"#!/bin/bash\n#SBATCH --gres=gpu:8\n")
    response = client.post(edit_url(), form_data(slug="hello", starter_file=upload))
    assert response.status_code == 200
    assert f"'{name}' is a file the portal writes itself (job.sh, job.out, job.err); rename your file." in page_text(
        response
    )
    assert not StarterFile.objects.exists()


def test_a_hidden_starter_file_is_refused(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(edit_url(), form_data(slug="hello", starter_file=SimpleUploadedFile(".bashrc", b"id\n")))
    assert "'.bashrc' is not a usable file name." in page_text(response)
    assert not StarterFile.objects.exists()


def test_a_preview_does_not_store_the_starter_file(client, instructor, assignment):
    client.force_login(instructor)
    data = form_data(slug="hello", preview="1", starter_file=SimpleUploadedFile("train.csv", b"x\n"))
    del data["save"]
    client.post(edit_url(), data)
    assert not StarterFile.objects.exists()


# ---- who may ----


@pytest.mark.parametrize("url", [create_url, edit_url])
def test_anonymous_visitors_are_sent_to_log_in(client, assignment, url):
    response = client.get(url())
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('account_login')}?next={url()}"


def test_an_anonymous_post_saves_nothing(client, course):
    response = client.post(create_url(), form_data())
    assert response.status_code == 302
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("url", [create_url, edit_url])
def test_students_may_not_write_assignments(client, student, assignment, url):
    client.force_login(student)
    assert client.get(url()).status_code == 403


def test_a_student_post_saves_nothing(client, student, course):
    client.force_login(student)
    assert client.post(create_url(), form_data()).status_code == 403
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("url", [create_url, edit_url])
def test_tas_may_not_write_assignments(client, ta, assignment, url):
    client.force_login(ta)
    assert client.get(url()).status_code == 403


def test_a_ta_post_changes_nothing(client, ta, assignment):
    client.force_login(ta)
    assert client.post(edit_url(), form_data(slug="hello")).status_code == 403
    assignment.refresh_from_db()
    assert assignment.title == "Hello GPU"


@pytest.mark.parametrize("url", [create_url, edit_url])
def test_the_instructor_of_another_course_gets_404(client, other_instructor, assignment, url):
    client.force_login(other_instructor)
    assert client.get(url()).status_code == 404
    assert client.post(url(), form_data(slug="hello")).status_code == 404
    assignment.refresh_from_db()
    assert assignment.title == "Hello GPU"


def test_an_assignment_of_another_course_cannot_be_edited_through_this_course(client, instructor, other_course):
    Assignment.objects.create(course=other_course, slug="theirs", title="Theirs", script_template="true\n")
    client.force_login(instructor)
    assert client.get(edit_url("theirs")).status_code == 404


def test_editing_an_unknown_assignment_gets_404(client, instructor):
    client.force_login(instructor)
    assert client.get(edit_url("nope")).status_code == 404


@pytest.mark.parametrize("method", ["put", "delete", "patch"])
@pytest.mark.parametrize("url", [create_url, edit_url])
def test_other_methods_are_not_allowed(client, instructor, assignment, method, url):
    client.force_login(instructor)
    assert getattr(client, method)(url()).status_code == 405
