"""Operations, the top layer: what must see every other app. `manage.py doctor` (is this installation
ready?), /healthz and /readyz, /metrics for Prometheus, and forgetting a person (`manage.py forget_person`)."""
