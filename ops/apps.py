from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        # Every process (web, worker, beat, commands) counts the Slurm commands it runs for /metrics.
        from ops.metrics import command_observed
        from slurm import runner

        if command_observed not in runner.observers:
            runner.observers.append(command_observed)
