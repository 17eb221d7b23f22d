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
    roster_sync_scheduled = models.BooleanField(
        default=False,
        help_text="Apply the LMS's member list to the roster on a schedule (adds, role changes and drops), as the "
        "instructor would on the roster page. Off until an instructor turns it on.",
    )
    roster_synced_at = models.DateTimeField(null=True, blank=True)
    roster_sync_outcome = models.TextField(blank=True, help_text="What the last scheduled roster sync did.")

    def __str__(self) -> str:
        return f"{self.context} -> {self.course}"


class ScoreStatus(models.TextChoices):
    SENT = "sent", "Sent"
    FAILED = "failed", "The LMS did not take it"
    NOT_SENT = "not_sent", "Not sent"


class ScorePost(models.Model):
    """A student's gradebook score of an assignment as last sent to one LMS course (AGS), and what it answered."""

    user = models.ForeignKey("portal.User", on_delete=models.CASCADE, related_name="lms_scores")
    assignment = models.ForeignKey("courses.Assignment", on_delete=models.CASCADE, related_name="lms_scores")
    context = models.ForeignKey(LtiContext, on_delete=models.CASCADE, related_name="score_posts")
    status = models.CharField(max_length=16, choices=ScoreStatus.choices, default=ScoreStatus.NOT_SENT)
    score = models.DecimalField(max_digits=9, decimal_places=2, null=True, blank=True)
    max_score = models.DecimalField(max_digits=9, decimal_places=2, null=True, blank=True)
    answer = models.TextField(blank=True, help_text="Why it was not sent, or what the LMS answered.")
    sent_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "assignment", "context"], name="one_score_post_per_lms_course")
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.assignment}: {self.status}"
