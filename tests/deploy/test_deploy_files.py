"""What the deployment files claim, checked without a Docker daemon or systemd as PID 1 (neither runs here):
the Dockerfile's user, requirements and static files; what .dockerignore keeps out of the image; the
compose file's services; the systemd units, read by systemd's own `systemd-analyze verify`."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from tests.deploy.units import (
    INSTALL,
    INSTALL_VENV_BIN,
    REPO,
    UNITS,
    environment,
    exec_start,
    service,
    unit_sections,
)

UNIT_NAMES = ["labqueue-web.service", "labqueue-worker@.service", "labqueue-beat.service", "labqueue-migrate.service"]
UNIT_NAMES += ["labqueue-housekeeping.service", "labqueue-housekeeping.timer"]
#: The worker template's instances (README "Workers and queues"), and the Celery queue each consumes.
WORKER_QUEUES = {"submit": "submit", "sync": "sync", "maintenance": "celery"}
ENTRYPOINT = str(REPO / "deploy" / "entrypoint")
#: The compose file's worker services, one per queue.
WORKERS = [f"worker-{queue}" for queue in WORKER_QUEUES]


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    instructions, pending = [], ""
    for raw in (REPO / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, rest = line.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    return instructions


def env_values(arguments: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in shlex.split(arguments))


def test_the_image_runs_as_the_unprivileged_service_account_after_its_last_root_step():
    instructions = dockerfile()
    users = [index for index, (keyword, _) in enumerate(instructions) if keyword == "USER"]
    last_run = max(index for index, (keyword, _) in enumerate(instructions) if keyword == "RUN")

    assert users, "the image names the user it runs as"
    assert instructions[users[-1]][1] == "labqueue"
    assert users[-1] > last_run, "nothing runs as root after USER"
    assert any("useradd" in arguments and "labqueue" in arguments for keyword, arguments in instructions)


def test_the_image_installs_only_the_runtime_requirements():
    installs = [
        " ".join(arguments.split())
        for keyword, arguments in dockerfile()
        if keyword == "RUN" and "pip install" in arguments
    ]
    runtime = (REPO / "requirements.txt").read_text()
    dev_only = {
        re.split(r"[\[=<>]", line)[0].lower()
        for line in (REPO / "requirements-dev.txt").read_text().splitlines()
        if line and not line.startswith(("#", "-r"))
    } - {"django-allauth", "pyyaml"}  # in both: allauth's runtime extras and the test IdP's; PyYAML for assignment
    # files (courses/assignment_yaml.py) and for the tests reading deploy/compose.yaml

    assert installs == [
        "pip install --no-cache-dir --target=/opt/labqueue/packages -r requirements.txt"
        " && pip install --no-cache-dir --no-deps --target=/opt/labqueue/packages -r requirements-nodeps.txt"
    ]
    assert not [arguments for _, arguments in dockerfile() if "requirements-dev" in arguments]
    assert not [line for line in runtime.splitlines() if line.startswith("-r")], (
        "requirements.txt pulls in no other file"
    )
    assert not {name for name in dev_only if re.search(rf"^{re.escape(name)}\b", runtime, re.I | re.M)}


def test_static_files_are_collected_where_the_settings_read_them_hashed_and_compressed(tmp_path):
    instructions = dockerfile()
    [collect] = [index for index, (keyword, args) in enumerate(instructions) if "collectstatic" in args]
    env = {}
    for keyword, arguments in instructions[:collect]:
        if keyword == "ENV":
            env.update(env_values(arguments))
    assert env.get("LABQUEUE_STATIC_MANIFEST") == "1", "the manifest storage is on when collectstatic runs"
    root = env["LABQUEUE_STATIC_ROOT"]

    read = "from django.conf import settings as s; print(s.STATIC_ROOT); print(s.STORAGES['staticfiles']['BACKEND'])"
    process_env = {"PATH": "/usr/bin:/bin", "LABQUEUE_SECRET_KEY": "x", "DJANGO_SETTINGS_MODULE": "portal.settings"}
    shown = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {read}"],
        cwd=REPO,
        env={**process_env, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.stdout.split() == [root, "whitenoise.storage.CompressedManifestStaticFilesStorage"], shown.stderr

    # The same command the image runs, into a directory of this test's, gives hashed and compressed files.
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=REPO,
        env={**process_env, **env, "LABQUEUE_STATIC_ROOT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert collected.returncode == 0, collected.stderr
    names = {path.name for path in tmp_path.iterdir()}
    assert "staticfiles.json" in names
    assert any(re.fullmatch(r"labqueue\.[0-9a-f]{12}\.css\.gz", name) for name in names)


def test_the_image_enters_through_the_entrypoint_with_the_web_server_as_default():
    instructions = dict(dockerfile())

    assert instructions["ENTRYPOINT"] == '["/app/deploy/entrypoint"]'
    assert instructions["CMD"] == '["web"]'
    assert os.access(REPO / "deploy" / "entrypoint", os.X_OK)


def test_the_slurm_client_is_chosen_at_build_time():
    instructions = dockerfile()
    args = [arguments.split("=")[0] for keyword, arguments in instructions if keyword == "ARG"]

    assert {"DEBIAN_RELEASE", "BASE_IMAGE", "SLURM_PACKAGES"} <= set(args)
    assert ("FROM", "${BASE_IMAGE}") in instructions
    assert any("${SLURM_PACKAGES}" in arguments for keyword, arguments in instructions if keyword == "RUN")


def stages() -> dict[str, list[tuple[str, str]]]:
    """The Dockerfile's stages by name (the last, unnamed one is "image"), each with its instructions."""
    named: dict[str, list[tuple[str, str]]] = {}
    current = None
    for keyword, arguments in dockerfile():
        if keyword == "FROM":
            base, _, name = arguments.partition(" AS ")
            current = named.setdefault(name.strip() or "image", [])
        if current is not None:
            current.append((keyword, arguments))
    return named


def test_the_image_is_built_in_two_stages_and_pip_runs_only_in_the_first():
    built = stages()

    assert list(built) == ["packages", "image"]
    assert not [arguments for keyword, arguments in built["image"] if "pip " in arguments]
    assert ("COPY", "--from=packages /opt/labqueue/packages /opt/labqueue/packages") in built["image"]
    env = {}
    for keyword, arguments in built["image"]:
        if keyword == "ENV":
            env.update(env_values(arguments))
    assert env["PYTHONPATH"] == "/opt/labqueue/packages"


def test_the_base_image_is_pinned_by_a_digest_the_readme_says_how_to_update():
    args = dict(arguments.split("=", 1) for keyword, arguments in dockerfile() if keyword == "ARG" and "=" in arguments)
    readme = (REPO / "README.md").read_text()

    assert re.fullmatch(r"sha256:[0-9a-f]{64}", args["BASE_DIGEST"]), args["BASE_DIGEST"]
    assert args["BASE_IMAGE"] == "python:3.11-slim-${DEBIAN_RELEASE}@${BASE_DIGEST}"
    assert [arguments for keyword, arguments in dockerfile() if keyword == "FROM"] == [
        "${BASE_IMAGE} AS packages",
        "${BASE_IMAGE}",
    ]
    assert "BASE_DIGEST" in readme and "docker buildx imagetools inspect python:3.11-slim-bookworm" in readme


def test_the_image_checks_its_health_through_the_probe():
    [check] = [arguments for keyword, arguments in dockerfile() if keyword == "HEALTHCHECK"]

    assert check.endswith('CMD ["/app/deploy/entrypoint", "probe", "/healthz"]'), check
    services = compose()["services"]
    for name in ("migrate", "doctor"):
        assert services[name]["healthcheck"] == {"disable": True}, f"{name} is a one-shot: no web server to ask"
    for name in ("beat", *WORKERS):
        assert services[name]["healthcheck"]["test"][-3:] == ["--server", "web:8000", "/readyz"], name


#: Lab, test and benchmark tooling of this repository: never in the image.
LAB_ONLY = re.compile(
    r"(^|/)(tests|labcluster|services|mutate[^/]*|bench_[^/]*|benchlib\.py|demo|seed_scale\.py|slurm24[^/]*"
    r"|capture_slurm_output|image|prereqs|mutation_report\.py|conftest\.py|test_[^/]*\.py)$"
)
#: What the build context holds at its top, and nothing else (.dockerignore's allow-list).
RUNTIME_TOP = {"manage.py", "requirements.txt", "requirements-nodeps.txt", "portal", "courses", "clusterpolicy", "jobs"}
RUNTIME_TOP |= {"reports", "ops", "api", "lms"}
RUNTIME_TOP |= {"slurm", "templates", "static", "deploy", "scripts"}


def build_context() -> list[str]:
    """Every file of this checkout that Docker sends as the build context (after .dockerignore), as the
    builder walks it: a directory left out with no exception below it is not entered."""
    exceptions = [
        line.strip()[1:].strip("/")
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip().startswith("!")
    ]
    sent = []
    for directory, subdirectories, files in os.walk(REPO):
        relative = os.path.relpath(directory, REPO)
        prefix = "" if relative == "." else relative + "/"
        subdirectories[:] = [
            name
            for name in subdirectories
            if not dockerignored(prefix + name) or any(rule.startswith(prefix + name + "/") for rule in exceptions)
        ]
        sent += [prefix + name for name in files if not dockerignored(prefix + name)]
    return sorted(sent)


def test_the_build_context_holds_what_production_runs_and_no_lab_test_or_benchmark_file():
    sent = build_context()

    assert not [path for path in sent if LAB_ONLY.search(path)], [path for path in sent if LAB_ONLY.search(path)]
    assert {path.split("/")[0] for path in sent} <= RUNTIME_TOP
    assert [path for path in sent if path.startswith("scripts/")] == [
        "scripts/labqueue-jobdir",
        "scripts/labqueue_jobdir.py",
    ]
    assert {"manage.py", "portal/settings.py", "deploy/entrypoint", "static/labqueue.css"} <= set(sent)
    assert not [path for path in sent if path.endswith((".pyc", ".env", ".sqlite3", ".out"))]


@pytest.mark.parametrize(
    "path",
    ["scripts/labcluster", "scripts/services", "scripts/mutate", "scripts/bench_sync.py", "scripts/demo"]
    + ["scripts/seed_scale.py", "scripts/slurm24", "scripts/capture_slurm_output", "slurm-10.out", "docs/records.md"],
)
def test_lab_only_scripts_and_local_output_stay_out_of_the_image(path):
    assert dockerignored(path)


def _pattern(pattern: str) -> re.Pattern:
    """A .dockerignore pattern as a regular expression: `*` and `?` within one path component, `**` across
    any number of directories (none included)."""
    regex, index = "", 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            regex, index = regex + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            regex, index = regex + ".*", index + 2
        elif pattern[index] in "*?":
            regex, index = regex + ("[^/]*" if pattern[index] == "*" else "[^/]"), index + 1
        else:
            regex, index = regex + re.escape(pattern[index]), index + 1
    return re.compile(regex)


def dockerignored(path: str) -> bool:
    """Whether Docker leaves `path` (relative to the build context) out by .dockerignore's rules: a pattern
    leaves out what it matches and everything below it; a later `!pattern` takes a path back in."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: count + 1]) for count in range(len(parts))]
    excluded = False
    for raw in (REPO / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        regex = _pattern(line.lstrip("!").strip("/"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            excluded = not line.startswith("!")
    return excluded


@pytest.mark.parametrize(
    "path",
    [".git/HEAD", ".venv/bin/python", ".venv-prod/bin/python", "var/db.sqlite3", "var/demo-secret"]
    + ["mutants/jobs/x.py", "tests/conftest.py", ".env", "deploy/.env", "jobs/__pycache__/models.cpython-311.pyc"],
)
def test_the_image_context_leaves_out_history_local_state_secrets_and_tests(path):
    assert dockerignored(path)


@pytest.mark.parametrize(
    "path",
    ["manage.py", "requirements.txt", "deploy/entrypoint", "deploy/gunicorn.conf.py", "deploy/sudoers.labqueue"]
    + [
        "scripts/labqueue-jobdir",
        "scripts/labqueue_jobdir.py",
        "static/labqueue.css",
        "templates/base.html",
        "portal/settings.py",
    ],
)
def test_the_image_context_keeps_what_the_portal_runs(path):
    assert (REPO / path).exists()
    assert not dockerignored(path)


def test_the_image_context_keeps_every_app_the_settings_install():
    """An app added to INSTALLED_APPS and forgotten in the allow-list would stop the image at its first import."""
    from django.conf import settings

    ours = [app.split(".")[0] for app in settings.INSTALLED_APPS if (REPO / app.split(".")[0]).is_dir()]
    assert "api" in ours and "lms" in ours
    assert [app for app in ours if dockerignored(f"{app}/__init__.py")] == []


def compose() -> dict:
    return yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())


def test_compose_runs_exactly_one_beat_and_starts_nothing_before_migrate_succeeded():
    services = compose()["services"]

    beats = [name for name, spec in services.items() if spec.get("command") == ["beat"]]
    assert beats == ["beat"]
    assert services["beat"]["deploy"]["replicas"] == 1
    assert "single instance" in (REPO / "deploy" / "compose.yaml").read_text()
    assert services["migrate"]["command"] == ["migrate"] and services["migrate"]["restart"] == "no"
    for name in ("web", *WORKERS, "beat"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name
        assert services[name]["env_file"] == ".env", name
    assert {"db", "redis", "migrate", "web", *WORKERS, "beat"} <= set(services)


def test_compose_runs_one_worker_per_queue_and_none_that_consumes_them_all():
    services = compose()["services"]

    workers = {name: spec["command"] for name, spec in services.items() if spec.get("command", [""])[0] == "worker"}
    assert workers == {f"worker-{queue}": ["worker", queue] for queue in WORKER_QUEUES}


def test_compose_checks_health_through_healthz_and_readyz():
    services = compose()["services"]

    assert services["web"]["healthcheck"]["test"][-2:] == ["probe", "/healthz"]
    for name in WORKERS:
        assert services[name]["healthcheck"]["test"][-1] == "/readyz", name
    assert services["db"]["healthcheck"] and services["redis"]["healthcheck"]


def test_compose_gives_each_worker_the_job_root_munge_socket_and_slurm_configuration():
    for name in WORKERS:
        volumes = compose()["services"][name]["volumes"]

        assert "/run/munge:/run/munge" in volumes
        assert "/etc/slurm:/etc/slurm:ro" in volumes
        assert any(volume.startswith("${LABQUEUE_JOB_ROOT") for volume in volumes)


def verified_copies(tmp_path: Path) -> list[Path]:
    """The units with the install paths replaced by this checkout, as systemd-analyze must find the programs;
    the worker template as each of its instances."""
    copies = []
    for name in UNIT_NAMES:
        text = (UNITS / name).read_text()
        text = text.replace(INSTALL_VENV_BIN, str(Path(sys.executable).parent)).replace(INSTALL, str(REPO))
        names = [name.replace("@.", f"@{queue}.") for queue in WORKER_QUEUES] if "@." in name else [name]
        for copy in names:
            (tmp_path / copy).write_text(text)
            copies.append(tmp_path / copy)
    return copies


def test_systemd_reads_every_unit_without_a_complaint(tmp_path):
    copies = verified_copies(tmp_path)
    result = subprocess.run(
        ["systemd-analyze", "verify", *[str(copy) for copy in copies]], capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_every_long_running_unit_runs_as_the_service_account_through_the_entrypoint_and_restarts_on_failure():
    for name in ("labqueue-web.service", "labqueue-worker@.service", "labqueue-beat.service"):
        settings = service(name)
        assert settings["User"] == ["labqueue"], name
        assert settings["EnvironmentFile"] == ["/etc/labqueue/labqueue.env"], name
        assert settings["Restart"] == ["on-failure"], name
        assert exec_start(name, instance="sync")[0] == ENTRYPOINT, name


def test_one_worker_unit_per_queue_and_the_entrypoint_knows_every_queue_the_settings_route_to():
    for instance in WORKER_QUEUES:
        assert exec_start("labqueue-worker@.service", instance=instance)[1:] == ["worker", instance]
    entrypoint = (REPO / "deploy" / "entrypoint").read_text()
    consumed = dict(re.findall(r"^\s+(\w+)\) shift; set -- -Q (\w+) ", entrypoint, flags=re.M))
    assert consumed == WORKER_QUEUES
    assert set(consumed.values()) == set(settings.CELERY_TASK_QUEUES)
    assert not (UNITS / "labqueue-worker.service").exists(), "no worker unit that consumes every queue"


def test_the_log_level_and_beats_schedule_come_from_the_settings_file_not_the_units():
    for name in UNIT_NAMES:
        for setting in ("ExecStart", "ExecStartPre", "Environment"):
            for line in unit_sections(name).get("Service", {}).get(setting, []):
                assert "--loglevel" not in line and "--schedule" not in line and "LOG_LEVEL" not in line, (name, line)
    assert "LABQUEUE_BEAT_SCHEDULE" in (REPO / "deploy" / "entrypoint").read_text()


def test_the_housekeeping_timer_clears_expired_sessions_daily_as_the_records_page_promises():
    timer = unit_sections("labqueue-housekeeping.timer")
    records = (REPO / "docs" / "records.md").read_text()

    assert timer["Timer"]["OnCalendar"] == ["daily"] and timer["Timer"]["Persistent"] == ["yes"]
    assert timer["Install"]["WantedBy"] == ["timers.target"]
    assert exec_start("labqueue-housekeeping.service")[1:] == ["manage", "clearsessions"]
    assert "`manage.py clearsessions` deletes expired rows; run it daily" in records
    assert service("labqueue-housekeeping.service")["User"] == ["labqueue"]


#: Settings that, in a unit with User=, imply NoNewPrivileges=yes (systemd.exec(5), systemd 252).
IMPLY_NO_NEW_PRIVILEGES = {
    "NoNewPrivileges",
    "LockPersonality",
    "MemoryDenyWriteExecute",
    "PrivateDevices",
    "ProtectClock",
    "ProtectHostname",
    "ProtectKernelLogs",
    "ProtectKernelModules",
    "ProtectKernelTunables",
    "RestrictAddressFamilies",
    "RestrictNamespaces",
    "RestrictRealtime",
    "RestrictSUIDSGID",
    "SystemCallArchitectures",
    "SystemCallFilter",
    "SystemCallLog",
}


def test_the_worker_may_use_sudo_and_the_others_gain_no_privilege():
    worker = service("labqueue-worker@.service")

    assert not IMPLY_NO_NEW_PRIVILEGES & set(worker), "sudo (set-user-ID root) must work in the worker"
    assert "CapabilityBoundingSet" not in worker and "AmbientCapabilities" not in worker
    for name in (
        "labqueue-web.service",
        "labqueue-beat.service",
        "labqueue-migrate.service",
        "labqueue-housekeeping.service",
    ):
        assert service(name)["NoNewPrivileges"] == ["yes"], name
        assert service(name)["ProtectSystem"] == ["strict"], name


def test_the_beat_unit_says_it_is_single_instance_and_the_web_unit_serves_hashed_static_files():
    assert "SINGLE INSTANCE" in (UNITS / "labqueue-beat.service").read_text()
    assert environment("labqueue-web.service")["LABQUEUE_STATIC_MANIFEST"] == "1"


def test_compose_keeps_the_images_static_root_media_root_and_beat_schedule_whatever_the_env_file_says():
    image_env = {}
    for keyword, arguments in dockerfile():
        if keyword == "ENV":
            image_env.update(env_values(arguments))
    services = compose()["services"]

    for name in ("web", *WORKERS, "beat", "migrate"):
        pinned = services[name]["environment"]
        for key in (
            "LABQUEUE_STATIC_ROOT",
            "LABQUEUE_STATIC_MANIFEST",
            "LABQUEUE_MEDIA_ROOT",
            "LABQUEUE_BEAT_SCHEDULE",
        ):
            assert pinned[key] == image_env[key], (name, key)
    assert "beat:" + str(Path(image_env["LABQUEUE_BEAT_SCHEDULE"]).parent) in services["beat"]["volumes"]
    for name in WORKERS:
        assert "media:" + image_env["LABQUEUE_MEDIA_ROOT"] in services[name]["volumes"]


def env_example_variables() -> set[str]:
    return set(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]*)=", (REPO / ".env.example").read_text(), flags=re.MULTILINE))


def test_every_variable_the_deployment_files_read_is_in_the_env_example():
    read = set()
    for name in ("entrypoint", "compose.yaml", "gunicorn.conf.py", "probe.py"):
        text = (REPO / "deploy" / name).read_text()
        read |= set(re.findall(r"\$\{(LABQUEUE_[A-Z0-9_]+|POSTGRES_[A-Z_]+)", text))
        read |= set(re.findall(r"""environ(?:\.get)?\(\s*["'](LABQUEUE_[A-Z0-9_]+)""", text))
    read -= {"LABQUEUE_STATIC_ROOT", "LABQUEUE_MEDIA_ROOT"} - env_example_variables()

    assert {"LABQUEUE_PYTHON", "LABQUEUE_IMAGE", "LABQUEUE_LOG_FORMAT", "LABQUEUE_BEAT_SCHEDULE"} <= read
    assert read - env_example_variables() == set()


def test_the_readme_settings_table_documents_every_variable_of_the_env_example():
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("## Settings (operators)") :]
    table = table[: table.index("\n## ", 5)]
    documented = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            documented |= set(re.findall(r"`([A-Z][A-Z0-9_]*)`", line.split("|")[1]))

    assert env_example_variables() - documented == set()
