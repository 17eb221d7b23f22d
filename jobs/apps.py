from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"

    def ready(self) -> None:
        # Register the job tasks in every process, the web server's too: jobs.enqueue sends them by name
        # from the app's registry, and only the worker discovers tasks modules by itself.
        from jobs import tasks  # noqa: F401
