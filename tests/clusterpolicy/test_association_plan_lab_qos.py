"""The reconciliation plan (pure) for the lab QOS (LABQUEUE_LAB_QOS): granted beside the course's, in the
same one command per group of students, so a run costs as many sacctmgr calls as before."""

from dataclasses import replace

from clusterpolicy.plan import DesiredAccount, UserLimits, plan
from slurm.accounts import Assoc

LIMITS = UserLimits(max_jobs=2, max_submit=4, max_tres={"gres/gpu": 1}, max_wall_minutes=30, gpu_minutes=None)
MATCHING = dict(max_jobs=2, max_submit=4, max_tres={"gres/gpu": 1}, max_wall_minutes=30, qos=("normal",))
ACCOUNT = Assoc("cs102", "", grp_tres={"gres/gpu": 4})


def desired(limits: UserLimits, users=("student1", "student2")) -> list[DesiredAccount]:
    return [DesiredAccount("cs102", "CS102 Fall", 4, {user: limits for user in users})]


def test_the_lab_qos_is_added_to_every_students_list_in_one_command():
    limits = replace(LIMITS, lab_qos="coursework")
    actual = [ACCOUNT, Assoc("cs102", "student1", **MATCHING), Assoc("cs102", "student2", **MATCHING)]

    (change,) = plan(cluster="lab", desired=desired(limits), actual=actual, known_users=set())[0]

    assert change.user == "student1,student2"
    assert change.differences == ["QOS: normal -> also coursework"]
    assert change.argv[-2:] == ["set", "QOS+=coursework"], "QOS+= keeps the QOS the site gave"


def test_the_course_qos_and_the_lab_qos_are_added_together():
    limits = replace(LIMITS, qos="classwork", lab_qos="coursework")
    actual = [ACCOUNT, Assoc("cs102", "student1", **{**MATCHING, "max_jobs": 9})]

    (change,) = plan(cluster="lab", desired=desired(limits, ["student1"]), actual=actual, known_users=set())[0]

    assert change.differences == ["MaxJobs: 9 -> 2", "QOS: normal -> also classwork,coursework"]
    assert change.argv[-3:] == ["set", "MaxJobs=2", "QOS+=classwork,coursework"]


def test_only_the_missing_one_is_added_and_a_qos_named_twice_once():
    has_course_qos = {**MATCHING, "qos": ("classwork", "normal")}
    actual = [ACCOUNT, Assoc("cs102", "student1", **has_course_qos)]

    (change,) = plan(
        cluster="lab",
        desired=desired(replace(LIMITS, qos="classwork", lab_qos="coursework"), ["student1"]),
        actual=actual,
        known_users=set(),
    )[0]
    assert change.argv[-1] == "QOS+=coursework"

    same = replace(LIMITS, qos="coursework", lab_qos="coursework")
    (change,) = plan(
        cluster="lab",
        desired=desired(same, ["student1"]),
        actual=[ACCOUNT, Assoc("cs102", "student1", **MATCHING)],
        known_users=set(),
    )[0]
    assert change.argv[-1] == "QOS+=coursework"


def test_a_lab_qos_already_granted_is_no_change():
    limits = replace(LIMITS, lab_qos="coursework")
    granted = {**MATCHING, "qos": ("coursework", "normal")}
    actual = [ACCOUNT, Assoc("cs102", "student1", **granted), Assoc("cs102", "student2", **granted)]

    assert plan(cluster="lab", desired=desired(limits), actual=actual, known_users=set()) == ([], [])
