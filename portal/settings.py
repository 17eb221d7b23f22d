"""LabQueue settings. Every value comes from the environment; see .env.example."""

import ipaddress
import json
import os
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from environs import Env, EnvValidationError

from portal.sso import DEFAULT_NETID_PATTERN, parse_group_roles, socialaccount_providers

BASE_DIR = Path(__file__).resolve().parent.parent

# Every value is parsed by environs (typed, strict): a value that is not what the setting needs stops the
# start with the variable's name, the problem and the value, e.g.
# "LABQUEUE_SYNC_SECONDS: not a valid integer ('5  # how often')". An empty number or boolean
# counts as unset (its default); an empty text is empty.
_ENV = Env(expand_vars=False)


def _parsed(name: str, parse, default, *, show_value: bool = True):
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        return parse(name)
    except EnvValidationError as error:
        problem = "; ".join(error.error_messages).rstrip(".") if error.error_messages else str(error)
        shown = f" ({value!r})" if show_value else ""
        raise ImproperlyConfigured(f"{name}: {problem[:1].lower()}{problem[1:]}{shown}") from None


def env(name: str, default: str = "") -> str:
    return _ENV.str(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    """1/0, true/false, yes/no, on/off (any case); anything else stops the start."""
    return _parsed(name, _ENV.bool, default)


def env_int(name: str, default: int) -> int:
    return _parsed(name, _ENV.int, default)


def env_list(name: str, default: str = "") -> list[str]:
    """A comma-separated list; blanks around items and empty items are dropped."""
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


def env_json(name: str, default: str):
    """A JSON value on one line (the SSO settings). An error does not repeat the value: it may hold a secret."""
    return _parsed(name, _ENV.json, json.loads(default), show_value=False)


DEBUG = env_bool("LABQUEUE_DEBUG")
SECRET_KEY = env("LABQUEUE_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("LABQUEUE_SECRET_KEY must be set when LABQUEUE_DEBUG is off.")
    SECRET_KEY = "insecure-development-key-only-for-debug"
if SECRET_KEY.startswith("change-me") and not DEBUG:
    raise ImproperlyConfigured(
        "LABQUEUE_SECRET_KEY: still the placeholder from .env.example. Set 50 or more random characters "
        "(e.g. `openssl rand -base64 48`)."
    )

ALLOWED_HOSTS = env_list("LABQUEUE_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("LABQUEUE_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.saml",
    "allauth.socialaccount.providers.openid_connect",
    "csp",
    "portal",
    "courses",
    "clusterpolicy",
    "jobs",
    "reports",
    "ops",
    "ninja",  # django-ninja serves the API docs page's own Swagger UI files (the CSP allows no CDN)
    "api",
    "lti_tool",  # django-lti: LMS registrations, deployments, the tool's keys (lms/)
    "lms",
]

MIDDLEWARE = [
    "portal.logs.RequestIdMiddleware",  # first, so every log line of the request carries its id
    "ops.metrics.RequestMetricsMiddleware",  # requests by view and status, and their time (/metrics)
    "portal.head.HeadAsGetMiddleware",  # HEAD answered as GET without the body (monitors probe with HEAD)
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "portal.caching.PrivateWhenSignedInMiddleware",  # a signed-in person's pages never kept by a shared cache
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "api.middleware.MethodNotAllowedProblemMiddleware",  # a 405 under /api/v1/ as a problem document
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context.portal",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}"),
        conn_max_age=60,
        conn_health_checks=True,  # a kept connection is checked (SELECT 1) before its first use in a request or task
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite (development only; the demo and production use PostgreSQL) set for several processes at once:
    # WAL so readers never wait for the writer, a busy timeout instead of "database is locked", and write
    # transactions that take the lock when they begin rather than fail half-way.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "portal.User"

AUTHENTICATION_BACKENDS = [
    "portal.auth.PasswordGateBackend",  # Django's ModelBackend, refusing every password while local passwords are off
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"
ACCOUNT_LOGOUT_REDIRECT_URL = "/accounts/login/"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "password1*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_ADAPTER = "portal.auth.AccountAdapter"
ACCOUNT_SESSION_REMEMBER = False
ACCOUNT_UNIQUE_EMAIL = False  # people are told apart by netid; an IdP e-mail must not block an SSO signup

LANGUAGE_CODE = "en-us"
TIME_ZONE = env("LABQUEUE_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env("LABQUEUE_STATIC_ROOT", str(BASE_DIR / "var" / "static")))
MEDIA_ROOT = Path(env("LABQUEUE_MEDIA_ROOT", str(BASE_DIR / "var" / "media")))

# Static files in production (the image, deploy/compose.yaml and deploy/systemd set LABQUEUE_STATIC_MANIFEST=1):
# whitenoise serves `collectstatic`'s output compressed, under content-hashed names cached for a year. Off by
# default because with it every page needs `collectstatic` run first (a missing manifest entry is an error when
# DEBUG is off), while without it the portal still serves its static files, only without the long caching.
if env_bool("LABQUEUE_STATIC_MANIFEST"):
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

# Security when served behind TLS (set LABQUEUE_SECURE=1 in production).
SECURE = env_bool("LABQUEUE_SECURE")
SESSION_COOKIE_SECURE = SECURE
CSRF_COOKIE_SECURE = SECURE
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = env_int("LABQUEUE_SESSION_SECONDS", 8 * 3600)
SESSION_COOKIE_SAMESITE = "Lax"  # SAML posts back cross-site, then allauth redirects: Lax keeps that working
if SECURE:
    SECURE_SSL_REDIRECT = env_bool("LABQUEUE_SSL_REDIRECT", True)  # 0 only where the proxy redirects itself
    SECURE_HSTS_SECONDS = env_int("LABQUEUE_HSTS_SECONDS", 365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("LABQUEUE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("LABQUEUE_HSTS_PRELOAD")  # a commitment for the whole registrable domain
# Django's defaults stay: X-Content-Type-Options nosniff, X-Frame-Options DENY, Referrer-Policy same-origin,
# Cross-Origin-Opener-Policy same-origin.
# Content Security Policy (django-csp), on every response: the portal's own scripts and styles only (static/),
# nothing inline, no eval, no plugins, never framed. No form-action: a sign-in form posts to the portal, which
# redirects to the campus IdP, and browsers hold such redirects to form-action too.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "frame-ancestors": [NONE],
    }
}
# Behind a TLS-terminating proxy Django sees plain HTTP: trust the proxy's X-Forwarded-Proto (and only
# set this when the proxy strips that header from clients), or SAML rejects responses posted to an
# https:// ACS URL as sent to the wrong address, and secure cookies and redirects break.
if env_bool("LABQUEUE_BEHIND_TLS_PROXY"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# LTI 1.3 launches (lms/): the OIDC state, nonce and launch data must be seen by every web worker, so they live
# in the Redis the broker uses, not in a per-process cache. Nothing else uses the "lti" cache.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # Computed course reports, shared by every web process and the worker (reports.course_report): a table of the
    # portal's database (reports migration 0003 creates it), so a report survives no outage the page would not.
    "reports": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "labqueue_report_cache",
        "OPTIONS": {"MAX_ENTRIES": 20000},
    },
    "lti": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env("LABQUEUE_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "KEY_PREFIX": "labqueue-lti",
    },
}

# Celery (Redis broker). Tasks are enqueued only after the database commits.
CELERY_BROKER_URL = env("LABQUEUE_REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery closes the database connection around every task unless told how many tasks may share one; a new
# PostgreSQL connection per task cost more CPU than the submit task's own queries. portal/celery.py keeps
# a connection only while tasks succeed, and checks it before each task (CONN_HEALTH_CHECKS).
CELERY_DB_REUSE_MAX = 500
# Every task has a time limit: at the soft limit the task is told (SoftTimeLimitExceeded) and tidies
# up; at the hard limit its process is killed and replaced, so nothing can hold a worker forever.
# A dispatch cut short counts as a local failure (LABQUEUE_DISPATCH_LOCAL_FAILURES). Celery puts these limits in
# each task's message when it is enqueued: the web server's and beat's values count, not only the worker's.
CELERY_TASK_SOFT_TIME_LIMIT = env_int("LABQUEUE_TASK_SOFT_SECONDS", 240)
CELERY_TASK_TIME_LIMIT = env_int("LABQUEUE_TASK_HARD_SECONDS", 300)

# Celery queues: what a person waits for never waits behind slower work. `submit` sends and cancels jobs
# (a burst before a deadline fills it), `sync` keeps job statuses and lab reservations current, and
# maintenance, in Celery's default queue `celery` (so any task not named here, and tasks a previous release
# left there before an upgrade), reconciles Slurm associations, ingests usage and purges files. A worker
# started without -Q consumes all three; production runs one worker per queue (README, "Workers and queues").
CELERY_TASK_QUEUES = {name: {"exchange": name, "routing_key": name} for name in ("submit", "sync", "celery")}
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "jobs.tasks.job_dispatch": {"queue": "submit"},
    "jobs.tasks.job_scancel": {"queue": "submit"},
    "jobs.tasks.check_submit": {"queue": "submit"},
    "jobs.tasks.jobs_sync": {"queue": "sync"},
    "jobs.tasks.labs_tick": {"queue": "sync"},
    "jobs.tasks.sessions_follow": {"queue": "sync"},
}
LABQUEUE_SYNC_SECONDS = env_int("LABQUEUE_SYNC_SECONDS", 5)
# How often the worker reconciles Slurm's associations with the course policies (LABQUEUE_SLURM_SYNC_SECONDS
# is the old name of the setting, still read).
LABQUEUE_RECONCILE_SECONDS = env_int("LABQUEUE_RECONCILE_SECONDS", env_int("LABQUEUE_SLURM_SYNC_SECONDS", 900))
LABQUEUE_LAB_TICK_SECONDS = env_int("LABQUEUE_LAB_TICK_SECONDS", 30)
LABQUEUE_USAGE_INGEST_SECONDS = env_int("LABQUEUE_USAGE_INGEST_SECONDS", 300)
CELERY_BEAT_SCHEDULE = {
    "jobs-sync": {
        "task": "jobs.tasks.jobs_sync",
        "schedule": float(LABQUEUE_SYNC_SECONDS),
        "options": {"expires": float(LABQUEUE_SYNC_SECONDS)},
    },
    # Interactive sessions: find the notebook servers that started, stop idle ones (jobs.sessions).
    "sessions-follow": {
        "task": "jobs.tasks.sessions_follow",
        "schedule": float(LABQUEUE_SYNC_SECONDS),
        "options": {"expires": float(LABQUEUE_SYNC_SECONDS)},
    },
    "associations-reconcile": {
        "task": "clusterpolicy.tasks.associations_reconcile",
        "schedule": float(LABQUEUE_RECONCILE_SECONDS),
        "options": {"expires": float(LABQUEUE_RECONCILE_SECONDS)},
    },
    "labs-tick": {
        "task": "jobs.tasks.labs_tick",
        "schedule": float(LABQUEUE_LAB_TICK_SECONDS),
        "options": {"expires": float(LABQUEUE_LAB_TICK_SECONDS)},
    },
    "usage-ingest": {
        "task": "reports.tasks.usage_ingest",
        "schedule": float(LABQUEUE_USAGE_INGEST_SECONDS),
        "options": {"expires": float(LABQUEUE_USAGE_INGEST_SECONDS)},
    },
    # Job notification mail whose task the broker did not take (jobs.notifications).
    "job-notify-resend": {"task": "jobs.tasks.job_notify_resend", "schedule": 300.0, "options": {"expires": 300.0}},
    # Uploads kept across a refused form, once the session that kept them has ended (jobs.retention).
    "kept-uploads-purge": {
        "task": "jobs.tasks.kept_uploads_purge",
        "schedule": 3600.0,
        "options": {"expires": 3600.0},
    },
    # Rosters of LMS-linked courses whose instructor turned the schedule on (lms.roster.roster_sync_apply).
    "lms-roster-sync": {
        "task": "lms.tasks.roster_sync_scheduled",
        "schedule": float(env_int("LABQUEUE_LMS_ROSTER_SYNC_SECONDS", 3600)),
        "options": {"expires": 3600.0},
    },
    # Line items of assignments with a check in LMS-linked courses, before their first score (lms.grades).
    "lms-line-items-create": {
        "task": "lms.tasks.line_items_create",
        "schedule": 900.0,
        "options": {"expires": 900.0},
    },
    # TAs' and instructors' daily mail of new failures (jobs.notifications), at this hour of LABQUEUE_TIME_ZONE.
    "failure-digests-send": {
        "task": "jobs.tasks.failure_digests_send",
        "schedule": crontab(minute=0, hour=env_int("LABQUEUE_DIGEST_HOUR", 7)),
        "options": {"expires": 3600.0},
    },
}
CELERY_TIMEZONE = TIME_ZONE

# Records (docs/records.md): the files of finished jobs (job directory, staged uploads) are removed this many
# days after the job ended, by `manage.py purge_job_files` and, when it is set, by the worker every hour (the
# job-files-purge task runs the same function). 0, the default, keeps them for good. Job and usage records stay.
LABQUEUE_RETAIN_JOB_FILES_DAYS = env_int("LABQUEUE_RETAIN_JOB_FILES_DAYS", 0)
if LABQUEUE_RETAIN_JOB_FILES_DAYS:
    CELERY_BEAT_SCHEDULE["job-files-purge"] = {
        "task": "jobs.tasks.job_files_purge",
        "schedule": 3600.0,
        "options": {"expires": 3600.0},
    }

# Slurm and the job directories.
# How the worker (an unprivileged service account) runs a command as the student; see
# deploy/sudoers.labqueue for the matching rule.
SLURM_RUN_AS_PREFIX = env("LABQUEUE_SLURM_RUN_AS_PREFIX", "sudo -n -u {user}")
SLURM_COMMAND_TIMEOUT = env_int("LABQUEUE_SLURM_TIMEOUT", 30)
SLURM_BIN_DIR = env("LABQUEUE_SLURM_BIN_DIR")
LABQUEUE_JOB_ROOT = Path(env("LABQUEUE_JOB_ROOT", "/var/lib/labqueue/jobs"))
# The job-directory helper (scripts/labqueue-jobdir, installed root-owned), run as the student.
LABQUEUE_JOBDIR_HELPER = env("LABQUEUE_JOBDIR_HELPER", "/usr/local/libexec/labqueue-jobdir")
LABQUEUE_JOBDIR_TIMEOUT = env_int("LABQUEUE_JOBDIR_TIMEOUT", 60)
# A job whose dispatch failed this many times for a reason on the portal's side (the helper timed
# out or could not run, the worker died or was killed mid-dispatch) is refused with the reason
# instead of being sent again forever. A cluster that does not answer is not counted.
LABQUEUE_DISPATCH_LOCAL_FAILURES = env_int("LABQUEUE_DISPATCH_LOCAL_FAILURES", 3)
LABQUEUE_UPLOAD_MAX_BYTES = env_int("LABQUEUE_UPLOAD_MAX_BYTES", 10 * 1024 * 1024)
LABQUEUE_LOG_TAIL_BYTES = env_int("LABQUEUE_LOG_TAIL_BYTES", 16 * 1024)
# How often an open job page asks whether its job changed (a poll of an unchanged job answers 304).
LABQUEUE_POLL_SECONDS = env_int("LABQUEUE_POLL_SECONDS", 3)
LABQUEUE_ZIP_MAX_BYTES = env_int("LABQUEUE_ZIP_MAX_BYTES", 512 * 1024 * 1024)
# Requests one person's API tokens may make per minute, all together (api.auth, counted in the broker's Redis);
# past it: 429. And how many tokens one person may have active (not revoked, not expired) at once.
LABQUEUE_API_REQUESTS_PER_MINUTE = env_int("LABQUEUE_API_REQUESTS_PER_MINUTE", 120)
LABQUEUE_API_TOKENS_PER_PERSON = env_int("LABQUEUE_API_TOKENS_PER_PERSON", 20)
LABQUEUE_RESUBMIT_AFTER_SECONDS = env_int("LABQUEUE_RESUBMIT_AFTER_SECONDS", 120)
# Interactive notebook sessions (jobs.sessions). The shell line a session's job runs to make `jupyter` available
# on the node (a site's `module load ...`); the secret the nginx proxy sends with its auth check (empty: no
# session opens); minutes without activity after which a session is stopped (0: never).
LABQUEUE_INTERACTIVE_SETUP = env("LABQUEUE_INTERACTIVE_SETUP", "")
LABQUEUE_INTERACTIVE_PROXY_SECRET = env("LABQUEUE_INTERACTIVE_PROXY_SECRET", "")
LABQUEUE_INTERACTIVE_IDLE_MINUTES = env_int("LABQUEUE_INTERACTIVE_IDLE_MINUTES", 30)
LABQUEUE_DEMO = env_bool("LABQUEUE_DEMO")

# Usage reports (Slurm accounting copied into the portal; see reports/).
LABQUEUE_SLURM_CLUSTER = env("LABQUEUE_SLURM_CLUSTER", "lab")
# Several clusters of one slurmdbd (README, "Several clusters"): the other clusters' names (ClusterName) a course
# may be bound to; their Slurm commands carry `-M <name>`. Empty: the one cluster above, and no -M anywhere.
LABQUEUE_SLURM_OTHER_CLUSTERS = env_list("LABQUEUE_SLURM_OTHER_CLUSTERS")
# The federation the clusters above form (`sacctmgr add federation`), a name a course may be bound to: its jobs are
# sent without -M and run on whichever cluster can start them first. Set, every other job carries -M <its cluster>
# (in a federation a job sent without -M is federated). Empty: no federation.
LABQUEUE_SLURM_FEDERATION = env("LABQUEUE_SLURM_FEDERATION", "")
LABQUEUE_USAGE_OVERLAP_SECONDS = env_int("LABQUEUE_USAGE_OVERLAP_SECONDS", 3600)
LABQUEUE_USAGE_FIRST_DAYS = env_int("LABQUEUE_USAGE_FIRST_DAYS", 120)
LABQUEUE_REPORT_DEFAULT_DAYS = env_int("LABQUEUE_REPORT_DEFAULT_DAYS", 120)
LABQUEUE_BILLING_RATE = env("LABQUEUE_BILLING_RATE")
LABQUEUE_BILLING_CURRENCY = env("LABQUEUE_BILLING_CURRENCY", "USD")

# Course policy in Slurm and classroom priority (clusterpolicy/; README "Classroom priority").
LABQUEUE_COURSE_QOS = env("LABQUEUE_COURSE_QOS")  # e.g. "coursework": --qos for course jobs (a course's own qos wins)
# e.g. "coursework": --qos for jobs in a lab's reservation, a QOS that may preempt research work; empty: labs wait
LABQUEUE_LAB_QOS = env("LABQUEUE_LAB_QOS")
LABQUEUE_RESERVATION_STRATEGY = env("LABQUEUE_RESERVATION_STRATEGY", "nodes")  # "nodes" (22.05) or "gpus" (23.11+)
LABQUEUE_RESERVABLE_NODES = env_list("LABQUEUE_RESERVABLE_NODES", "gpu1,gpu2")  # nodes labs may reserve
# The nodes labs of a course bound to another cluster may reserve there, e.g. {"lab2": ["gpu3", "gpu4"]}; a cluster
# not listed has none. Its reservations are made, checked and deleted with `scontrol -M <cluster>`.
LABQUEUE_RESERVABLE_NODES_BY_CLUSTER = env_json("LABQUEUE_RESERVABLE_NODES_BY_CLUSTER", "{}")
if not isinstance(LABQUEUE_RESERVABLE_NODES_BY_CLUSTER, dict) or not all(
    isinstance(nodes, list) and all(isinstance(node, str) for node in nodes)
    for nodes in LABQUEUE_RESERVABLE_NODES_BY_CLUSTER.values()
):
    raise ImproperlyConfigured(
        'LABQUEUE_RESERVABLE_NODES_BY_CLUSTER must be a JSON object of node name lists, e.g. {"lab2": ["gpu3"]}.'
    )
if unknown := sorted(set(LABQUEUE_RESERVABLE_NODES_BY_CLUSTER) - set(LABQUEUE_SLURM_OTHER_CLUSTERS)):
    raise ImproperlyConfigured(
        f"LABQUEUE_RESERVABLE_NODES_BY_CLUSTER names {', '.join(unknown)}, not in LABQUEUE_SLURM_OTHER_CLUSTERS: "
        "list each other cluster there too."
    )
LABQUEUE_GPUS_PER_NODE = env_int("LABQUEUE_GPUS_PER_NODE", 4)  # capacity for the "gpus" strategy
LABQUEUE_LAB_RESERVE_AHEAD_MINUTES = env_int("LABQUEUE_LAB_RESERVE_AHEAD_MINUTES", 60)  # reserve this early
if LABQUEUE_RESERVATION_STRATEGY not in ("nodes", "gpus"):
    raise ImproperlyConfigured("LABQUEUE_RESERVATION_STRATEGY must be 'nodes' or 'gpus'.")

# Lab sessions instructors may schedule (courses.policy.lab_limit_problems): longest lab, most nodes (or GPUs
# with the "gpus" strategy) one lab may reserve, and how far ahead a lab may be scheduled.
LABQUEUE_LAB_MAX_MINUTES = env_int("LABQUEUE_LAB_MAX_MINUTES", 240)
LABQUEUE_LAB_MAX_NODES = env_int("LABQUEUE_LAB_MAX_NODES", 2)
LABQUEUE_LAB_MAX_GPUS = env_int("LABQUEUE_LAB_MAX_GPUS", 8)
LABQUEUE_LAB_MAX_DAYS_AHEAD = env_int("LABQUEUE_LAB_MAX_DAYS_AHEAD", 120)

# Ceilings operations staff set on every course policy (courses.selectors.course_ceilings). An instructor's
# policy cannot exceed them, and `reconcile_associations` never writes more into Slurm; a course limit left
# empty gets the ceiling. A course can have its own ceilings (CourseCeiling, Django admin, operations staff
# only). Each has a safe default; 0 = no ceiling (only for the last three). `manage.py doctor` warns about
# a ceiling left to its default or set to 0, so a site sets its own.
LABQUEUE_CEILING_GPUS_PER_JOB = env_int("LABQUEUE_CEILING_GPUS_PER_JOB", 4)
LABQUEUE_CEILING_CPUS_PER_JOB = env_int("LABQUEUE_CEILING_CPUS_PER_JOB", 32)
LABQUEUE_CEILING_MEM_MB_PER_JOB = env_int("LABQUEUE_CEILING_MEM_MB_PER_JOB", 128000)
LABQUEUE_CEILING_MINUTES_PER_JOB = env_int("LABQUEUE_CEILING_MINUTES_PER_JOB", 1440)
LABQUEUE_CEILING_JOBS_PER_STUDENT = env_int("LABQUEUE_CEILING_JOBS_PER_STUDENT", 20)  # running, and waiting or running
LABQUEUE_CEILING_GPU_HOURS_PER_STUDENT = env_int("LABQUEUE_CEILING_GPU_HOURS_PER_STUDENT", 100)
LABQUEUE_CEILING_GPUS_PER_COURSE = env_int("LABQUEUE_CEILING_GPUS_PER_COURSE", 16)
#: The ceilings this installation left to their defaults (not in its environment), for `manage.py doctor`.
LABQUEUE_CEILINGS_DEFAULTED = tuple(
    f"LABQUEUE_CEILING_{name}"
    for name in ("GPUS_PER_JOB", "CPUS_PER_JOB", "MEM_MB_PER_JOB", "MINUTES_PER_JOB")
    + ("JOBS_PER_STUDENT", "GPU_HOURS_PER_STUDENT", "GPUS_PER_COURSE")
    if not os.environ.get(f"LABQUEUE_CEILING_{name}", "").strip()
)
# The QOS and partitions a course policy may name (besides empty: the site's default). Empty list: none.
LABQUEUE_ALLOWED_QOS = env_list("LABQUEUE_ALLOWED_QOS")
LABQUEUE_ALLOWED_PARTITIONS = env_list("LABQUEUE_ALLOWED_PARTITIONS", "gpu")
# Instructors' hints one course may hold (courses.hints): every failed job's page checks them all.
LABQUEUE_MAX_HINTS_PER_COURSE = env_int("LABQUEUE_MAX_HINTS_PER_COURSE", 50)
# Who people are told to ask when they need more than a ceiling or limit allows.
LABQUEUE_OPERATIONS_CONTACT = env("LABQUEUE_OPERATIONS_CONTACT", "the cluster's operations staff")

# Who the portal may become (portal/identity.py): never root, a system account (uid below LABQUEUE_MIN_UID)
# or a name on the deny list, whether it comes from campus sign-in, a roster, the admin or a job.
LABQUEUE_MIN_UID = env_int("LABQUEUE_MIN_UID", 1000)
LABQUEUE_DENIED_NETIDS = env_list("LABQUEUE_DENIED_NETIDS", "root,nobody")

# Campus SSO (django-allauth SAML and OpenID Connect; see portal/sso.py and .env.example).
# Local passwords (password login, reset and change, at /accounts/ and /admin/login/) are off unless the demo
# (LABQUEUE_DEMO=1) or LABQUEUE_LOCAL_PASSWORDS=1 turns them on; LABQUEUE_SSO_ONLY=1 keeps them off whatever
# else says. allauth's SOCIALACCOUNT_ONLY is the one switch the running portal reads (portal.auth).
LABQUEUE_SSO_ONLY = env_bool("LABQUEUE_SSO_ONLY")
LABQUEUE_LOCAL_PASSWORDS = (env_bool("LABQUEUE_LOCAL_PASSWORDS") or LABQUEUE_DEMO) and not LABQUEUE_SSO_ONLY
LABQUEUE_NETID_ATTRIBUTE = env("LABQUEUE_NETID_ATTRIBUTE", "eppn")
LABQUEUE_NETID_PATTERN = env("LABQUEUE_NETID_PATTERN", DEFAULT_NETID_PATTERN)
LABQUEUE_ACCOUNT_CHECK = env("LABQUEUE_ACCOUNT_CHECK", "getent")  # "getent" or "none"
LABQUEUE_ACCOUNT_REQUEST_URL = env("LABQUEUE_ACCOUNT_REQUEST_URL")  # where to ask for a cluster account
LABQUEUE_STAFF_AFFILIATIONS = env_list("LABQUEUE_STAFF_AFFILIATIONS")
LABQUEUE_STAFF_GROUPS = env_list("LABQUEUE_STAFF_GROUPS")
LABQUEUE_GROUP_ROLES = env_json("LABQUEUE_GROUP_ROLES", "{}")  # {"<group>": "<course slug>:<role>"}
parse_group_roles(LABQUEUE_GROUP_ROLES)  # a bad mapping stops the start, not a login
LABQUEUE_SAML_IDPS = env_json("LABQUEUE_SAML_IDPS", "[]")
LABQUEUE_OIDC_PROVIDERS = env_json("LABQUEUE_OIDC_PROVIDERS", "[]")
SOCIALACCOUNT_PROVIDERS = socialaccount_providers(
    saml=LABQUEUE_SAML_IDPS, oidc=LABQUEUE_OIDC_PROVIDERS, netid_claim=LABQUEUE_NETID_ATTRIBUTE
)
SOCIALACCOUNT_ADAPTER = "portal.auth.SocialAccountAdapter"
SOCIALACCOUNT_ONLY = not LABQUEUE_LOCAL_PASSWORDS
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # link people by netid (portal.auth), never by e-mail
SOCIALACCOUNT_STORE_TOKENS = False
SOCIALACCOUNT_LOGIN_ON_GET = False

# Operating the portal: e-mail, who people ask for help, logs and error reports (README "Operating it").

# E-mail (password resets, where local passwords are on; Django's error mails): Django's own setting names.
# LABQUEUE_DEMO alone prints mail to the console; scripts/demo sets the file backend and its folder (its inbox).
EMAIL_BACKEND = env("EMAIL_BACKEND", f"django.core.mail.backends.{'console' if LABQUEUE_DEMO else 'smtp'}.EmailBackend")
EMAIL_FILE_PATH = env("EMAIL_FILE_PATH")  # django.core.mail.backends.filebased.EmailBackend: one file per sending
EMAIL_HOST = env("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS")  # STARTTLS, usually on port 587
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL")  # TLS from the first byte, usually on port 465
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 30)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "LabQueue <labqueue@localhost>")
SERVER_EMAIL = env("SERVER_EMAIL", DEFAULT_FROM_EMAIL)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both.")

# Who people are told to contact when something keeps failing (error pages, job failure explanations).
LABQUEUE_SUPPORT_CONTACT = env("LABQUEUE_SUPPORT_CONTACT", "your TA or instructor")

# The portal's address as people reach it, for links in mail (job notifications, failure digests).
LABQUEUE_SITE_URL = env("LABQUEUE_SITE_URL", "http://localhost:8000")

# Site notice: one line operators set (maintenance, an outage), shown at the top of every page; empty shows none.
LABQUEUE_SITE_NOTICE = env("LABQUEUE_SITE_NOTICE", "")

# Logs: one line per record on stderr for web, worker and beat alike. "json" (the default outside the demo):
# time (UTC, ISO 8601), level, logger, message, and request_id / job where known (portal/logs.py);
# "text": the same fields for a person reading a terminal.
LABQUEUE_LOG_FORMAT = env("LABQUEUE_LOG_FORMAT", "text" if LABQUEUE_DEMO else "json")
if LABQUEUE_LOG_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured(f"LABQUEUE_LOG_FORMAT: must be 'json' or 'text' ({LABQUEUE_LOG_FORMAT!r})")
LABQUEUE_LOG_LEVEL = env("LABQUEUE_LOG_LEVEL", "INFO").upper()
if LABQUEUE_LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ImproperlyConfigured(
        f"LABQUEUE_LOG_LEVEL: must be DEBUG, INFO, WARNING, ERROR or CRITICAL ({LABQUEUE_LOG_LEVEL!r})"
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "context": {"()": "portal.logs.ContextFilter"},
        # A 403 or 404 is one line without a traceback; a 500 keeps its traceback at ERROR.
        "refusal": {"()": "portal.logs.RefusalFilter"},
        # A broker (Redis) outage is one WARNING when it starts and one INFO when it ends, not a traceback a cycle.
        "broker_outage": {"()": "portal.logs.BrokerOutageFilter"},
    },
    "formatters": {
        "json": {"()": "portal.logs.JsonLinesFormatter"},
        "text": {"()": "portal.logs.TextFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LABQUEUE_LOG_FORMAT,
            "filters": ["context", "broker_outage"],
        },
    },
    "loggers": {"django.request": {"filters": ["refusal"]}},
    "root": {"handlers": ["console"], "level": LABQUEUE_LOG_LEVEL},
}

# Operations: Prometheus metrics at /metrics (ops/metrics.py), off unless a token or an allow-list is
# set. Scrapers send `Authorization: Bearer <LABQUEUE_METRICS_TOKEN>`, or come from an address or CIDR
# network on LABQUEUE_METRICS_ALLOW (compared with REMOTE_ADDR: behind a proxy, that is the proxy's address).
LABQUEUE_METRICS_TOKEN = env("LABQUEUE_METRICS_TOKEN")
LABQUEUE_METRICS_ALLOW = env_list("LABQUEUE_METRICS_ALLOW")
for _network in LABQUEUE_METRICS_ALLOW:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"LABQUEUE_METRICS_ALLOW: {_network!r} is not an IP address or CIDR network.")
# `manage.py doctor` (ops/doctor.py) checks munge with `munge -n | unmunge` on munge's default socket, or on
# this one when set (where the site's Slurm uses AuthInfo=socket=...).
LABQUEUE_MUNGE_SOCKET = env("LABQUEUE_MUNGE_SOCKET")
# Celery keeps these settings (portal/celery.py configures its processes' logging from LOGGING).
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# Error reports to Sentry, only when SENTRY_DSN is set: Django and Celery errors, never personal data.
SENTRY_DSN = env("SENTRY_DSN")
if SENTRY_DSN:
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    from portal import __version__

    sentry_sdk.init(
        dsn=SENTRY_DSN,
        environment=env("SENTRY_ENVIRONMENT", "production"),
        release=f"labqueue@{__version__}",
        integrations=[DjangoIntegration(), CeleryIntegration()],
        send_default_pii=False,
        traces_sample_rate=0.0,
    )
