from django.apps import AppConfig


class LmsConfig(AppConfig):
    name = "lms"
    verbose_name = "LMS (LTI 1.3)"

    def ready(self) -> None:
        from jobs.signals import check_finished
        from lms import receivers

        check_finished.connect(receivers.check_finished, dispatch_uid="lms-score-post")
