from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from courses.models import Assignment, Course, Dataset, Enrollment, StarterFile
from courses.roster import RosterPlan, RosterRow


@transaction.atomic
def assignment_save(
    *, course: Course, fields: dict, datasets: list[Dataset], assignment: Assignment | None = None,
    starter_file: UploadedFile | None = None,
) -> Assignment:
    """Create or update an assignment from validated fields (AssignmentForm checks them)."""
    assignment = assignment or Assignment(course=course)
    for name, value in fields.items():
        setattr(assignment, name, value)
    assignment.full_clean(exclude=["parameters"])
    assignment.save()
    assignment.datasets.set(datasets)
    if starter_file is not None:
        StarterFile.objects.filter(assignment=assignment, name=starter_file.name).delete()
        StarterFile.objects.create(assignment=assignment, name=starter_file.name, file=starter_file)
    return assignment


@transaction.atomic
def enrollment_set(*, user, course: Course, role: str) -> Enrollment:
    enrollment, _ = Enrollment.objects.update_or_create(user=user, course=course, defaults={"role": role})
    return enrollment


@transaction.atomic
def enrollments_grant(*, user, course_roles: dict[str, str]) -> list[Enrollment]:
    """Enroll `user` with the given roles (course slug -> role), e.g. from IdP groups. Unknown slugs are skipped."""
    courses = Course.objects.filter(slug__in=course_roles)
    return [enrollment_set(user=user, course=course, role=course_roles[course.slug]) for course in courses]


@transaction.atomic
def roster_apply(*, course: Course, plan: RosterPlan, actor) -> RosterPlan:
    """Apply a previewed roster plan: all of it or, on any problem, nothing.

    People the portal does not know yet get an account with their netid and no password, so their
    first campus sign-in links to it (portal.auth) instead of creating someone new.
    """
    if not plan.ok:
        raise ValidationError("The roster has errors; nothing was changed.")
    for row in plan.adds:
        Enrollment.objects.create(user=_roster_user(row), course=course, role=row.role)
    for change in plan.role_changes:
        updated = Enrollment.objects.filter(course=course, user__netid=change.row.netid, role=change.old_role)
        if updated.update(role=change.row.role) != 1:
            raise ValidationError(f"{change.row.netid}'s enrollment changed since the preview; nothing was changed.")
    for drop in plan.drops:
        deleted, _ = Enrollment.objects.filter(course=course, user__netid=drop.netid, role=drop.role).delete()
        if deleted != 1:
            raise ValidationError(f"{drop.netid}'s enrollment changed since the preview; nothing was changed.")
    return plan


def _roster_user(row: RosterRow):
    User = get_user_model()
    user = User.objects.filter(netid=row.netid).first()
    if user is not None:
        return user
    username, n = row.netid, 1
    while User.objects.filter(username=username).exists():
        username, n = f"{row.netid}{n}", n + 1
    user = User(username=username, netid=row.netid, email=row.email, first_name=row.first_name, last_name=row.last_name)
    user.set_unusable_password()
    user.full_clean()
    user.save()
    return user
