from django.apps import AppConfig


class CoursesConfig(AppConfig):
    name = "courses"

    def ready(self) -> None:
        from portal.signals import sso_course_roles

        sso_course_roles.connect(_grant_sso_course_roles, dispatch_uid="courses.enrollments_grant")


def _grant_sso_course_roles(sender, *, user, course_roles: dict[str, str], **kwargs) -> None:
    """portal.auth cannot import courses: on an SSO login it announces the course roles of the IdP groups."""
    from courses.services import enrollments_grant  # models are ready only once ready() has run

    enrollments_grant(user=user, course_roles=course_roles)
