from django.apps import AppConfig


class LmsConfig(AppConfig):
    name = "lms"
    verbose_name = "LMS (LTI 1.3)"
