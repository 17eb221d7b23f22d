"""Assignments exported to YAML and imported again: byte-stable round trips, a preview before anything changes,
line-numbered problems, nothing half-applied, and hostile YAML (aliases, tags, huge or deep files) refused."""

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Assignment, Hint
from tests.conftest import submit_form


def export(client, course_slug="cs101", slug="hello") -> bytes:
    response = client.get(reverse("courses:assignment-export", args=[course_slug, slug]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{course_slug}-{slug}.yaml"'
    return response.content


def upload(client, text: str | bytes, course_slug="cs101"):
    data = text.encode() if isinstance(text, str) else text
    return client.post(
        reverse("courses:assignment-import", args=[course_slug]),
        {"assignment_file": SimpleUploadedFile("a.yaml", data, content_type="text/yaml")},
    )


def confirm(client, text: str, course_slug="cs101"):
    return client.post(reverse("courses:assignment-import", args=[course_slug]), {"yaml_text": text, "confirm": "1"})


def text_of(response) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture
def second_instructor(instructor, other_course):
    other_course.enrollments.create(user=instructor, role="instructor")
    return instructor


def test_an_exported_assignment_imported_into_another_course_exports_to_the_same_bytes(
    client, instructor, assignment, course, other_course, second_instructor
):
    Hint.objects.create(course=course, assignment=assignment, pattern="CUDA out of memory", message="Use less.")
    client.force_login(instructor)
    first = export(client)
    assert b"script_template: |\n" in first, "the script reads as a literal block"
    preview = upload(client, first, course_slug="cs102")
    assert preview.status_code == 200
    assert "Create a new assignment" in text_of(preview)
    assert not Assignment.objects.filter(course=other_course).exists(), "the preview changes nothing"

    response = confirm(client, first.decode(), course_slug="cs102")

    assert response.status_code == 302
    copy = Assignment.objects.get(course=other_course, slug="hello")
    assert copy.versions.count() == 1
    assert Hint.objects.get(assignment=copy).pattern == "CUDA out of memory"
    assert export(client, course_slug="cs102") == first


def test_importing_over_an_existing_assignment_updates_it_as_one_new_version(client, instructor, assignment):
    client.force_login(instructor)
    text = export(client).decode().replace('echo "done $NAME"', 'echo "finished $NAME"')
    assert "finished" in text
    assert "Update the existing assignment" in text_of(upload(client, text))
    before = assignment.versions.count()
    assert confirm(client, text).status_code == 302
    assignment.refresh_from_db()
    assert "finished $NAME" in assignment.script_template
    assert assignment.versions.count() == before + 1


def test_problems_are_listed_with_their_line_and_nothing_is_saved(client, instructor, assignment):
    client.force_login(instructor)
    text = export(client).decode()
    bad = text.replace("  gpus: 1\n", "  gpus: 9\n").replace(
        "script_template: |\n", "script_template: |\n  #SBATCH -N 4\n"
    )
    response = upload(client, bad)
    assert response.status_code == 400
    page = text_of(response)
    assert "Nothing was changed" in page
    resources_line = bad.splitlines().index("resources:") + 1
    template_line = bad.splitlines().index("script_template: |") + 1
    assert f"Line {resources_line} (resources):" in page and "at most 2 GPUs" in page
    assert f"Line {template_line} (script_template):" in page
    assert confirm(client, bad).status_code == 400, "a confirm of a bad file shows the problems again"
    assignment.refresh_from_db()
    assert assignment.gpus == 1 and "#SBATCH" not in assignment.script_template


def test_a_billion_laughs_file_is_refused_before_it_is_built(client, instructor, course):
    lines = ['lol0: &lol0 "lol"'] + [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 10)}]" for i in range(1, 10)]
    response = upload(client_login(client, instructor), "\n".join(lines) + "\n")
    assert response.status_code == 400
    assert "Line 1: anchors and aliases (& and *) are not accepted" in text_of(response)


@pytest.mark.parametrize(
    "document, message",
    [
        ("labqueue: 1\ntitle: !!python/object/apply:os.system ['id']\n", "Line 2: tags (such as"),
        ("labqueue: 1\ntitle: !custom x\n", "tags (such as !custom)"),
        ("labqueue: 1\ntitle: [unclosed\n", "Line 3, column 1: this is not valid YAML"),
        ("just text\n", "The file must be a mapping of keys"),
        (
            "labqueue: 1\n" + "x: " + "[" * 5000 + "]" * 5000 + "\n",
            "Line 2, column 1003: this is not valid YAML (exceeded maximum nesting depth)",
        ),
        ("labqueue: 2\ntitle: Future\n", "this is not a LabQueue assignment file"),
        ("labqueue: 1\ntitle: [1, 2]\n", "Line 2 (title): give text here."),
        ("labqueue: 1\nshell: rm -rf /\n", "Line 2 (shell): unknown key."),
    ],
)
def test_hostile_or_foreign_yaml_is_refused_with_a_clear_message(client, instructor, course, document, message):
    response = upload(client_login(client, instructor), document)
    assert response.status_code == 400
    assert message in text_of(response)
    assert not Assignment.objects.exists()


def test_a_huge_file_is_refused(client, instructor, course):
    response = upload(client_login(client, instructor), "labqueue: 1\n" + "# padding\n" * 20000)
    assert response.status_code == 400
    assert "larger than 128 KB" in text_of(response)


def test_a_file_that_is_not_utf8_is_refused(client, instructor, course):
    response = upload(client_login(client, instructor), "title: caf\xe9\n".encode("latin-1"))
    assert response.status_code == 400
    assert "not UTF-8 text" in text_of(response)


def client_login(client, user):
    client.force_login(user)
    return client


def test_only_course_staff_export_and_only_instructors_import(client, student, ta, outsider, assignment):
    client.force_login(student)
    assert client.get(reverse("courses:assignment-export", args=["cs101", "hello"])).status_code == 403
    assert client.get(reverse("courses:assignment-import", args=["cs101"])).status_code == 403
    client.force_login(ta)
    assert client.get(reverse("courses:assignment-export", args=["cs101", "hello"])).status_code == 200
    assert client.get(reverse("courses:assignment-import", args=["cs101"])).status_code == 403
    client.force_login(outsider)
    assert client.get(reverse("courses:assignment-export", args=["cs101", "hello"])).status_code == 404
    assert client.post(reverse("courses:assignment-export", args=["cs101", "hello"])).status_code == 405
    client.logout()
    assert client.get(reverse("courses:assignment-import", args=["cs101"])).status_code == 302


@pytest.mark.slurm
def test_an_imported_assignment_runs(client, instructor, student, assignment, course, other_course, second_instructor):
    """Imported into the course it came from under a new short name, it runs like the original."""
    from jobs.models import Job, Status
    from tests.conftest import dispatch, wait_for_status

    client.force_login(instructor)
    text = export(client).decode().replace("slug: hello\n", "slug: hello2\n")
    assert confirm(client, text).status_code == 302
    client.force_login(student)
    assert client.post(reverse("jobs:assignment-detail", args=["cs101", "hello2"]), submit_form()).status_code == 302
    job = wait_for_status(dispatch(Job.objects.get()), Status.COMPLETED)
    assert job.assignment.slug == "hello2" and job.assignment_version.script_template == assignment.script_template


def test_the_import_page_opens_with_an_empty_form_and_no_problem_shown(client, instructor, course):
    client.force_login(instructor)
    response = client.get(reverse("courses:assignment-import", args=["cs101"]))
    assert response.status_code == 200
    assert 'name="assignment_file"' in response.content.decode()
    assert "This field is required" not in response.content.decode()
