"""What a roster preview promises: who is added, whose role changes, who is dropped, who is kept and who is left
as is, and a digest that names exactly that plan.

Pure (courses.roster): `current` is the course's netid -> role as courses.selectors.roster_current gives it.
"""

from courses.roster import Drop, RoleChange, RosterPlan, RosterRow, roster_diff, roster_parse, roster_plan

ROSTER = """netid,email,name,role
instructor1,,Ada Instructor,instructor
student1,,Sam Student,ta
student4,student4@example.edu,Pat Newcomer,student
ta1,,Tomas Assistant,ta
"""
CURRENT = {"student3": "student", "ta1": "ta", "student1": "student", "student2": "ta", "instructor1": "instructor"}


def test_the_preview_lists_adds_role_changes_drops_and_how_many_stay_as_they_are():
    plan = roster_plan(ROSTER, CURRENT)

    assert plan == RosterPlan(
        adds=(RosterRow(4, "student4", "student4@example.edu", "Pat", "Newcomer", "student"),),
        role_changes=(RoleChange(RosterRow(3, "student1", "", "Sam", "Student", "ta"), "student"),),
        drops=(Drop("student2", "ta"), Drop("student3", "student")),
        unchanged=2,
    )
    assert plan.ok and plan.has_changes


def test_a_roster_of_only_newcomers_leaves_nobody_unchanged():
    plan = roster_plan("netid,email,name,role\nstudent4,,,student\nstudent5,,,ta\n", {})

    assert [row.netid for row in plan.adds] == ["student4", "student5"]
    assert plan.unchanged == 0 and plan.drops == () and plan.role_changes == ()


def test_people_listed_with_the_role_they_have_are_left_as_they_are():
    plan = roster_plan(ROSTER.replace("student1,,Sam Student,ta", "student1,,Sam Student,student"), CURRENT)

    assert [row.netid for row in plan.adds] == ["student4"]
    assert plan.role_changes == () and plan.unchanged == 3


def test_the_person_uploading_is_kept_though_the_roster_leaves_them_out():
    text = "netid,email,name,role\nstudent1,,,student\n"

    plan = roster_plan(
        text,
        {"instructor1": "instructor", "student1": "student", "student2": "student"},
        keep=frozenset({"instructor1"}),
    )

    assert plan.ok
    assert plan.kept == ("instructor1",)
    assert plan.drops == (Drop("student2", "student"),)
    assert plan.unchanged == 1


def test_a_roster_changing_the_uploaders_own_role_is_refused_on_their_line():
    text = "netid,email,name,role\nstudent1,,,student\ninstructor1,,,ta\n"

    plan = roster_diff(roster_parse(text)[0], {"instructor1": "instructor"}, keep=frozenset({"instructor1"}))

    assert [str(error) for error in plan.errors] == [
        "Line 3: this would change your own role (instructor to ta); ask another instructor."
    ]
    assert not plan.ok and plan.role_changes == ()


def test_the_digest_names_the_plan_the_same_each_time_it_is_previewed():
    first, again = roster_plan(ROSTER, CURRENT).digest(), roster_plan(ROSTER, dict(CURRENT)).digest()

    assert first == again
    assert len(first) == 64 and set(first) <= set("0123456789abcdef"), "fits the confirmation form's digest field"


def test_any_difference_in_who_is_added_changed_or_dropped_gives_another_digest():
    digest = roster_plan(ROSTER, CURRENT).digest()
    other_add = roster_plan(ROSTER.replace("student4@example.edu", "pat@example.edu"), CURRENT)
    other_change = roster_plan(ROSTER, CURRENT | {"student1": "instructor"})
    other_drop = roster_plan(ROSTER, CURRENT | {"student5": "student"})
    no_drop = roster_plan(ROSTER, {name: role for name, role in CURRENT.items() if name != "student3"})

    digests = [digest] + [plan.digest() for plan in (other_add, other_change, other_drop, no_drop)]
    assert len(set(digests)) == len(digests)
