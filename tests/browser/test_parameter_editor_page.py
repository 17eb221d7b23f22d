"""The parameter editor in the browser: an instructor builds an assignment with three parameters in the editor
(no JSON typed), sees the preview of the script and of the students' form follow each change, saves it, and a
student submits it with values of their own. The editor and the student's form pass axe-core at phone width."""

import pytest
from playwright.sync_api import Page, expect

from courses.models import Assignment
from jobs.models import Job
from tests.browser.conftest import PHONE, axe_violations
from tests.browser.test_phone_pages import TOO_WIDE

pytestmark = pytest.mark.timeout(300)

SCRIPT = 'echo "epochs=$EPOCHS size=$SIZE augment=$AUGMENT"\n'


def fill_row(page: Page, number: int, **values: str) -> None:
    """Fill parameter row `number` (from 0) of the editor; each change may re-render the previews (htmx)."""
    for field, value in values.items():
        control = page.locator(f"#id_param-{number}-{field}")
        if field == "type":
            control.select_option(value)
        else:
            control.fill(value)
            control.dispatch_event("change")


def add_row(page: Page, rows_before: int) -> None:
    page.get_by_role("button", name="Add a parameter").click()
    expect(page.locator("fieldset.parameter-row")).to_have_count(rows_before + 1)


def test_an_instructor_builds_an_assignment_in_the_editor_and_a_student_submits_it(
    page_for, instructor, student, course
):
    page = page_for(instructor)
    page.goto(f"/courses/{course.slug}/assignments/new/")
    page.get_by_label("Title").fill("Train a CNN")
    page.get_by_label("Slug").fill("cnn")
    page.get_by_label("Script template").fill(SCRIPT)
    preview = page.locator("#script-preview")

    expect(page.locator("fieldset.parameter-row")).to_have_count(1)
    fill_row(page, 0, name="EPOCHS", label="Epochs", default="3", min="1", max="20")
    expect(preview).to_contain_text("export EPOCHS=3")
    add_row(page, 1)
    fill_row(page, 1, name="SIZE", label="Model size", type="choice")
    fill_row(page, 1, choices="small, large", default="small")
    expect(preview).to_contain_text("export SIZE=small")
    add_row(page, 2)
    fill_row(page, 2, name="AUGMENT", label="Augment the data", type="bool")
    fill_row(page, 2, default="true")
    expect(preview).to_contain_text("export AUGMENT=true")

    fill_row(page, 0, default="5")
    expect(preview).to_contain_text("export EPOCHS=5")
    students_form = page.locator("#student-form-preview")
    expect(students_form.get_by_label("Model size")).to_be_visible()
    expect(students_form.get_by_label("Augment the data")).to_be_checked()

    page.set_viewport_size(PHONE)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the editor is {width} px wide: {page.evaluate(TOO_WIDE)}"
    assert axe_violations(page) == []

    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/courses/{course.slug}/assignments/cnn/")
    assignment = Assignment.objects.get(course=course, slug="cnn")
    assert [(p["name"], p["type"], p["default"]) for p in assignment.parameters] == [
        ("EPOCHS", "int", 5),
        ("SIZE", "choice", "small"),
        ("AUGMENT", "bool", True),
    ]

    page = page_for(student, viewport=PHONE)
    page.goto(f"/courses/{course.slug}/assignments/cnn/")
    page.get_by_label("Epochs").fill("7")
    page.get_by_label("Model size").select_option("large")
    page.get_by_label("Augment the data").uncheck()
    assert axe_violations(page) == []
    page.get_by_role("button", name="Submit job").click()
    job = Job.objects.get(assignment=assignment, user=student)
    page.wait_for_url(f"**/jobs/{job.uuid}/")
    assert job.parameters == {"EPOCHS": 7, "SIZE": "large", "AUGMENT": False}
    assert "export EPOCHS=7\nexport SIZE=large\nexport AUGMENT=false\n" in job.script
