"""The one signal the portal sends for an app above it: portal imports no app (see pyproject's import contracts)."""

from django.dispatch import Signal

#: Sent on an SSO login whose IdP groups map to course roles, with `user` and `course_roles`
#: (course slug -> role). courses grants those enrollments (courses.apps connects the receiver).
sso_course_roles = Signal()
