"""The pages members read: my courses, a course, an assignment."""

import html
import re

import pytest
from django.urls import reverse

from courses.models import Assignment
from tests.conftest import ECHO_SCRIPT, make_user

EXPECTED_PREVIEW = (
    """\
#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --mem=500M
#SBATCH --time=00:05:00
# CS101: Hello GPU
# Parameters, checked by the portal:
export EPOCHS=2
export RATE=0.5
export SIZE=small
export NAME=run
# ---- assignment script ----
"""
    + ECHO_SCRIPT
)


def course_url(slug: str = "cs101") -> str:
    return reverse("courses:course-detail", args=[slug])


def assignment_url(slug: str = "cs101", assignment_slug: str = "hello") -> str:
    return reverse("jobs:assignment-detail", args=[slug, assignment_slug])


def page_text(response) -> str:
    return html.unescape(response.content.decode())


def preview_of(response) -> str | None:
    match = re.search(r'<pre [^>]*aria-label="Script">(.*?)</pre>', response.content.decode(), re.DOTALL)
    return html.unescape(match.group(1)) if match else None


def login_url(next_url: str) -> str:
    return f"{reverse('account_login')}?next={next_url}"


# ---- my courses ----


def test_the_course_list_shows_only_the_users_courses(client, student, other_course):
    client.force_login(student)
    response = client.get(reverse("courses:course-list"))
    assert response.status_code == 200
    assert "CS101: GPU Computing" in page_text(response)
    assert "CS102" not in page_text(response)


def test_the_course_list_shows_the_role_in_each_course(client, ta):
    client.force_login(ta)
    assert "Teaching assistant" in page_text(client.get(reverse("courses:course-list")))


def test_a_user_without_courses_sees_a_friendly_empty_page(client, course):
    client.force_login(make_user("newcomer"))
    response = client.get(reverse("courses:course-list"))
    assert response.status_code == 200
    assert "You are not enrolled in any course yet." in page_text(response)
    assert "ask your instructor or TA" in page_text(response)
    assert "CS101" not in page_text(response)


def test_anonymous_visitors_of_the_course_list_are_sent_to_log_in(client):
    response = client.get(reverse("courses:course-list"))
    assert response.status_code == 302
    assert response["Location"] == login_url(reverse("courses:course-list"))


# ---- a course ----


def test_a_member_sees_the_course_and_its_assignments(client, student, assignment):
    client.force_login(student)
    response = client.get(course_url())
    assert response.status_code == 200
    assert "CS101: GPU Computing" in page_text(response)
    assert f'href="{assignment_url()}"' in response.content.decode()
    assert "1 GPU, 1 CPU, 500 MB, 5 min" in page_text(response)


def test_a_course_without_assignments_says_so(client, student):
    client.force_login(student)
    assert "No assignments yet." in page_text(client.get(course_url()))


def test_only_the_instructor_is_offered_a_new_assignment(client, student, ta, instructor):
    new = f'href="{reverse("courses:assignment-create", args=["cs101"])}"'
    for user, offered in ((student, False), (ta, False), (instructor, True)):
        client.force_login(user)
        assert (new in client.get(course_url()).content.decode()) is offered, user


def test_a_non_member_gets_404_for_a_course(client, outsider, course):
    client.force_login(outsider)
    assert client.get(course_url()).status_code == 404


def test_an_unknown_course_is_404(client, student):
    client.force_login(student)
    assert client.get(course_url("nope")).status_code == 404


def test_anonymous_visitors_of_a_course_are_sent_to_log_in(client, course):
    response = client.get(course_url())
    assert response.status_code == 302
    assert response["Location"] == login_url(course_url())


# ---- an assignment ----


def test_a_student_sees_the_submission_form(client, student, assignment):
    client.force_login(student)
    response = client.get(assignment_url())
    assert response.status_code == 200
    content = response.content.decode()
    assert f'action="{assignment_url()}"' in content, "the page posts to itself"
    assert 'name="param_EPOCHS"' in content
    assert 'name="gpus"' in content
    assert "Submit job" in content


def test_a_student_does_not_see_the_script(client, student, assignment):
    client.force_login(student)
    response = client.get(assignment_url())
    assert preview_of(response) is None
    assert "#SBATCH" not in page_text(response)
    assert "Script preview" not in page_text(response)
    assert 'echo "done $NAME" > results/out.txt' not in page_text(response)


def test_a_student_is_not_offered_to_edit_the_assignment(client, student, assignment):
    client.force_login(student)
    assert "Edit this assignment" not in page_text(client.get(assignment_url()))


def test_a_ta_sees_the_exact_script_preview(client, ta, assignment):
    client.force_login(ta)
    response = client.get(assignment_url())
    assert response.status_code == 200
    assert "Script preview (default values)" in page_text(response)
    assert preview_of(response) == EXPECTED_PREVIEW


def test_a_ta_is_not_offered_to_edit_the_assignment(client, ta, assignment):
    client.force_login(ta)
    assert "Edit this assignment" not in page_text(client.get(assignment_url()))


def test_the_instructor_sees_the_preview_and_an_edit_link(client, instructor, assignment):
    client.force_login(instructor)
    response = client.get(assignment_url())
    assert preview_of(response) == EXPECTED_PREVIEW
    assert f'href="{reverse("courses:assignment-edit", args=["cs101", "hello"])}"' in response.content.decode()


def test_the_preview_exports_the_first_dataset_path(client, ta, assignment, dataset):
    assignment.datasets.add(dataset)
    client.force_login(ta)
    assert f"export DATASET={dataset.path}\n" in preview_of(client.get(assignment_url()))


def test_a_non_member_gets_404_for_an_assignment(client, outsider, assignment):
    client.force_login(outsider)
    assert client.get(assignment_url()).status_code == 404


def test_a_ta_of_another_course_gets_404_for_an_assignment(client, other_ta, assignment):
    client.force_login(other_ta)
    assert client.get(assignment_url()).status_code == 404


def test_an_assignment_of_another_course_is_404_through_this_course(client, student, other_course):
    Assignment.objects.create(course=other_course, slug="theirs", title="Theirs", script_template="true\n")
    client.force_login(student)
    assert client.get(assignment_url(assignment_slug="theirs")).status_code == 404


def test_an_unknown_assignment_is_404(client, student):
    client.force_login(student)
    assert client.get(assignment_url(assignment_slug="nope")).status_code == 404


def test_anonymous_visitors_of_an_assignment_are_sent_to_log_in(client, assignment):
    response = client.get(assignment_url())
    assert response.status_code == 302
    assert response["Location"] == login_url(assignment_url())


# ---- methods ----


@pytest.mark.parametrize("method", ["post", "put", "delete"])
@pytest.mark.parametrize("url", [lambda: reverse("courses:course-list"), course_url], ids=["list", "course"])
def test_the_pages_only_answer_get(client, student, assignment, method, url):
    client.force_login(student)
    assert getattr(client, method)(url()).status_code == 405


@pytest.mark.parametrize("method", ["put", "delete"])
def test_the_assignment_page_answers_get_and_its_forms_post_only(client, student, assignment, method):
    client.force_login(student)
    assert getattr(client, method)(assignment_url()).status_code == 405
