from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "reports"
    verbose_name = "Usage reports"

    def ready(self) -> None:
        # Every process (web, worker, beat, commands) counts the Slurm commands it runs for /metrics.
        from reports.metrics import command_observed
        from slurm import runner

        if command_observed not in runner.observers:
            runner.observers.append(command_observed)
