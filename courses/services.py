from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from courses.models import Assignment, Course, Dataset, Enrollment, StarterFile


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
