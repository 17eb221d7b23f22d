"""The reconciliation plan (pure): desired course policy vs associations read from sacctmgr."""

from clusterpolicy.plan import DesiredAccount, UserLimits, plan
from slurm.accounts import Assoc

LIMITS = UserLimits(
    max_jobs=2, max_submit=4, max_tres={"cpu": 4, "mem": 4000, "gres/gpu": 1}, max_wall_minutes=30, gpu_minutes=600
)
MATCHING = dict(
    max_jobs=2,
    max_submit=4,
    max_tres={"cpu": 4, "mem": 4000, "gres/gpu": 1},
    max_wall_minutes=30,
    grp_tres_mins={"gres/gpu": 600},
    qos=("normal",),
)


def desired(users=("student1",), gpus=4) -> list[DesiredAccount]:
    return [DesiredAccount("cs102", "CS102 Fall", gpus, {user: LIMITS for user in users})]


def test_when_slurm_matches_the_plan_is_empty():
    actual = [Assoc("cs102", "", grp_tres={"gres/gpu": 4}), Assoc("cs102", "student1", **MATCHING)]
    assert plan(cluster="lab", desired=desired(), actual=actual, known_users={"student1"}) == ([], [])


def test_a_missing_account_and_user_are_added_then_limited():
    changes, _ = plan(cluster="lab", desired=desired(), actual=[], known_users=set())
    assert [c.action for c in changes] == ["add-account", "modify", "add-user", "modify"]
    assert changes[1].argv[-1] == "GrpTRES=gres/gpu=4"
    assert "MaxTRES=cpu=4,gres/gpu=1,mem=4000M" in changes[3].argv
    assert "GrpTRESMins=gres/gpu=600" in changes[3].argv


def test_a_limit_changed_by_hand_is_a_difference_named_with_both_values():
    actual = [Assoc("cs102", "", grp_tres={"gres/gpu": 4}), Assoc("cs102", "student1", **{**MATCHING, "max_jobs": 9})]
    changes, _ = plan(cluster="lab", desired=desired(), actual=actual, known_users={"student1"})
    assert len(changes) == 1
    assert changes[0].differences == ["MaxJobs: 9 -> 2"]
    assert changes[0].argv[-1] == "MaxJobs=2"


def test_a_limit_the_course_no_longer_has_is_cleared_with_minus_one():
    actual = [Assoc("cs102", "", grp_tres={"gres/gpu": 4, "cpu": 10}), Assoc("cs102", "student1", **MATCHING)]
    changes, _ = plan(cluster="lab", desired=desired(gpus=None), actual=actual, known_users=set())
    assert changes[0].argv[-1] == "GrpTRES=cpu=-1,gres/gpu=-1"


def test_only_known_users_who_are_not_enrolled_are_removed():
    actual = [
        Assoc("cs102", "", grp_tres={"gres/gpu": 4}),
        Assoc("cs102", "student1", **MATCHING),
        Assoc("cs102", "student2"),
        Assoc("cs102", "opsperson"),
    ]
    changes, unmanaged = plan(cluster="lab", desired=desired(), actual=actual, known_users={"student1", "student2"})
    assert [(c.action, c.user) for c in changes] == [("delete-user", "student2")]
    assert unmanaged == [{"account": "cs102", "user": "opsperson", "why": "not a portal user"}]


def test_a_policy_change_for_a_class_of_300_is_one_command_and_a_student_changed_by_hand_another():
    students = [f"s{number:03}" for number in range(300)]
    old = {**MATCHING, "max_wall_minutes": 20}
    actual = [Assoc("cs102", "", grp_tres={"gres/gpu": 4})] + [Assoc("cs102", user, **old) for user in students]
    actual[5] = Assoc("cs102", students[4], **{**old, "max_jobs": 9})

    changes, _ = plan(cluster="lab", desired=desired(students), actual=actual, known_users=set(students))

    assert [(change.action, len(change.user.split(","))) for change in changes] == [("modify", 299), ("modify", 1)]
    everyone, by_hand = changes
    assert f"name={','.join(user for user in students if user != students[4])}" in everyone.argv
    assert everyone.argv[-1] == "MaxWall=30" and everyone.differences == ["MaxWall: 20 -> 30"]
    assert by_hand.user == students[4] and by_hand.argv[-2:] == ["MaxJobs=2", "MaxWall=30"]
