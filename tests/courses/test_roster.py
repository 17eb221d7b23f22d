"""Roster import: an instructor uploads a CSV, previews adds / role changes / drops, and confirms."""

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Enrollment, Role
from courses.roster import roster_diff, roster_parse

ROSTER_URL = reverse("courses:roster-import", args=["cs101"])

GOOD = """netid,email,name,role
instructor1,instructor1@example.edu,Ada Instructor,instructor
student1,student1@example.edu,Sam Student,ta
student4,student4@example.edu,Pat Newcomer,student
"""


def upload(client, text: str, url: str = ROSTER_URL):
    return client.post(url, {"roster": SimpleUploadedFile("roster.csv", text.encode()), "preview": "1"})


def confirm(client, preview_response, url: str = ROSTER_URL):
    form = preview_response.context["confirm"]
    return client.post(url, {"csv_text": form.initial["csv_text"], "digest": form.initial["digest"], "confirm": "1"})


def roles(course) -> dict[str, str]:
    return dict(Enrollment.objects.filter(course=course).values_list("user__netid", "role"))


def test_a_good_roster_is_previewed_then_applied(client, course, instructor, student, classmate):
    client.force_login(instructor)
    preview = upload(client, GOOD)
    assert preview.status_code == 200
    plan = preview.context["plan"]
    assert [row.netid for row in plan.adds] == ["student4"]
    assert [(c.row.netid, c.old_role, c.row.role) for c in plan.role_changes] == [("student1", "student", "ta")]
    assert [drop.netid for drop in plan.drops] == ["student2"]
    assert roles(course) == {"instructor1": "instructor", "student1": "student", "student2": "student"}, "preview only"

    response = confirm(client, preview)
    assert response.status_code == 302
    assert roles(course) == {"instructor1": "instructor", "student1": "ta", "student4": "student"}
    newcomer = get_user_model().objects.get(netid="student4")
    assert newcomer.username == "student4" and newcomer.email == "student4@example.edu"
    assert newcomer.first_name == "Pat" and newcomer.last_name == "Newcomer"
    assert not newcomer.has_usable_password()


def test_bad_rows_are_reported_with_line_numbers_and_nothing_is_applied(client, course, instructor, student):
    client.force_login(instructor)
    text = (
        "netid,email,name,role\n"
        "student4,student4@example.edu,Pat,student\n"  # line 2: fine
        "student5,student5@example.edu,Kim,professor\n"  # line 3: unknown role
        "student4,other@example.edu,Pat Again,student\n"  # line 4: duplicate netid
        "student6,not-an-email,Lee,student\n"  # line 5: bad e-mail
        "Bad Name!,bad@example.edu,Bad,student\n"  # line 6: invalid netid
    )
    response = upload(client, text)
    assert response.status_code == 400
    page = response.content.decode()
    for line, words in [(3, "unknown role"), (4, "already on line 2"), (5, "not a valid e-mail"), (6, "not a valid")]:
        assert f"Line {line}: " in page and words in page
    assert "Nothing was changed" in page
    assert response.context["confirm"] is None
    assert roles(course) == {"instructor1": "instructor", "student1": "student"}
    assert not get_user_model().objects.filter(netid="student4").exists()


def test_a_confirmation_applies_only_the_plan_that_was_previewed(client, course, instructor, student):
    client.force_login(instructor)
    preview = upload(client, GOOD)
    Enrollment.objects.filter(user=student).update(role=Role.INSTRUCTOR)  # someone changes the course meanwhile
    response = confirm(client, preview)
    assert response.status_code == 200
    assert b"changed since the preview" in response.content
    assert not get_user_model().objects.filter(netid="student4").exists()

    edited = {"csv_text": GOOD.replace("Pat Newcomer,student", "Pat Newcomer,instructor"), "confirm": "1"}
    edited["digest"] = preview.context["confirm"].initial["digest"]
    client.post(ROSTER_URL, edited)
    assert not get_user_model().objects.filter(netid="student4").exists()


def test_a_dropped_student_loses_access_to_the_course(client, course, instructor, student, classmate):
    client.force_login(instructor)
    confirm(client, upload(client, GOOD))
    client.force_login(classmate)
    assert client.get(reverse("courses:course-detail", args=["cs101"])).status_code == 404


def test_the_instructor_uploading_is_never_dropped(client, course, instructor, student):
    client.force_login(instructor)
    preview = upload(client, "netid,email,name,role\nstudent1,,Sam,student\n")
    assert preview.context["plan"].kept == ("instructor1",)
    confirm(client, preview)
    assert roles(course) == {"instructor1": "instructor", "student1": "student"}


def test_a_roster_links_to_an_existing_account_with_that_netid(client, course, instructor, outsider):
    client.force_login(instructor)
    confirm(client, upload(client, "netid,email,name,role\ninstructor1,,,instructor\nstudent3,,,student\n"))
    assert Enrollment.objects.get(course=course, user=outsider).role == Role.STUDENT
    assert get_user_model().objects.filter(netid="student3").count() == 1


def test_a_new_netid_whose_username_is_taken_gets_its_own_account(client, course, instructor):
    get_user_model().objects.create_user(username="student4", password="x")  # a local account, no netid
    client.force_login(instructor)
    confirm(client, upload(client, "netid,email,name,role\ninstructor1,,,instructor\nstudent4,,,student\n"))
    person = get_user_model().objects.get(netid="student4")
    assert person.username == "student41"


def test_the_roster_page_needs_a_login(client, course):
    response = client.get(ROSTER_URL)
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))


def test_students_and_tas_may_not_import_a_roster(client, course, student, ta):
    for person in (student, ta):
        client.force_login(person)
        assert client.get(ROSTER_URL).status_code == 403
        assert upload(client, GOOD).status_code == 403


def test_another_course_roster_is_not_found(client, course, other_ta, other_course, instructor):
    client.force_login(instructor)
    assert client.get(reverse("courses:roster-import", args=["cs102"])).status_code == 404


def test_the_roster_page_refuses_other_methods(client, course, instructor):
    client.force_login(instructor)
    assert client.put(ROSTER_URL).status_code == 405


def test_instructors_see_a_roster_link_on_the_course_page(client, course, instructor, student):
    client.force_login(instructor)
    assert ROSTER_URL.encode() in client.get(reverse("courses:course-detail", args=["cs101"])).content
    client.force_login(student)
    assert ROSTER_URL.encode() not in client.get(reverse("courses:course-detail", args=["cs101"])).content


def test_the_parser_reads_headers_in_any_order_and_skips_blank_lines():
    rows, errors = roster_parse("\ufeffRole,Name,NetID,Email\nTA,Tomas Assistant,TA1,ta1@example.edu\n\n")
    assert errors == []
    assert rows[0].netid == "ta1" and rows[0].role == "ta" and rows[0].first_name == "Tomas" and rows[0].line == 2


def test_the_parser_refuses_a_file_without_the_needed_columns():
    rows, errors = roster_parse("netid,role\nstudent1,student\n")
    assert rows == [] and "missing: email, name" in str(errors[0]) and errors[0].line == 1


def test_the_diff_never_demotes_the_person_uploading():
    rows, _ = roster_parse("netid,email,name,role\ninstructor1,,,student\n")
    plan = roster_diff(rows, {"instructor1": "instructor"}, keep=frozenset({"instructor1"}))
    assert not plan.ok and "your own role" in str(plan.errors[0])
