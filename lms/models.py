"""What LabQueue adds to django-lti's registrations and contexts: whose campus identity a launch carries, and
which LabQueue course an LMS course is linked to. Read on the web side (launches, the setup page, the admin)."""

from django.db import models
from lti_tool.models import LtiContext, LtiRegistration

from courses.models import Course


class RegistrationIdentity(models.Model):
    """The claim of a registration's launches that carries the person's netid (their campus identity).

    ``claim`` names a top-level claim, or a key inside one after ``#``: e.g.
    ``https://purl.imsglobal.org/spec/lti/claim/custom#netid`` (a custom field the LMS fills with the netid) or
    ``https://purl.imsglobal.org/spec/lti/claim/lis#person_sourcedid`` (the SIS id, where it is the netid).
    A registration without one signs nobody in. Never an e-mail claim: an LMS administrator can set any e-mail.
    """

    registration = models.OneToOneField(LtiRegistration, on_delete=models.CASCADE, related_name="identity")
    claim = models.CharField(max_length=255, help_text="Claim holding the netid, e.g. …/claim/custom#netid.")

    def __str__(self) -> str:
        return f"{self.registration}: {self.claim}"


class CourseLink(models.Model):
    """An LMS course (an LTI context) linked to one LabQueue course, by an instructor of that course."""

    context = models.OneToOneField(LtiContext, on_delete=models.CASCADE, related_name="course_link")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="lms_links")
    linked_by = models.ForeignKey("portal.User", on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.context} -> {self.course}"
