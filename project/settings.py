"""Django settings, every deployment-specific value read from the environment.

Embedded default: SQLite in ./var, a Redis started by `manage.py up`.
Production: DATABASE_URL=postgres://..., REDIS_URL=redis://..., SECRET_KEY, DEBUG=false,
ALLOWED_HOSTS, and the SECURE_* values below (see docs/deployment.md).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import django_stubs_ext

from project.env import (
    env_bool,
    env_float,
    env_int,
    env_list,
    env_processing_timezone,
    env_str,
    env_uri_map,
    parse_database_url,
)

django_stubs_ext.monkeypatch()  # generic admin/DRF classes (ModelAdmin[Model]) at runtime

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
# The embedded default needs no configuration; a production deployment must set SECRET_KEY.
# The default's "django-insecure-" prefix makes `check --deploy` report it (security.W009).
SECRET_KEY = env_str("SECRET_KEY", "django-insecure-embedded-key-set-SECRET_KEY-in-production")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "kernel.admin_site.AdminConfig",  # django.contrib.admin on the operators' site (kernel.admin_kit)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc as static files: /api/docs/ needs no CDN
    "project",
    "kernel",
    "xcommands",
    "workflows",
    "operations",
    "datasets",
    "coordinators",
    "oozieapi",
    "bundles",
    "batches",
    "statusservice",
]
# Benchmarks and failure drills (manage.py bench, manage.py chaos) live beside the product, in
# a checkout only: named here, never imported by the product (tooling/__init__.py).
if importlib.util.find_spec("tooling") is not None:
    INSTALLED_APPS.append("tooling")

MIDDLEWARE = [
    # First: NUL, lone surrogates and non-UTF-8 bytes in the URL or headers get a 400 before anything reads them.
    "project.middleware.HostileInputMiddleware",
    # A request that lost the database (a server restarting) gets a 503 with Retry-After.
    "project.middleware.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Status changes a request makes are recorded as its user's (History pages).
    "project.middleware.StatusActorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"

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
            ],
        },
    },
]

DATABASES = {
    "default": parse_database_url(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"), BASE_DIR
    )
}
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # A paused or partitioned worker inside a transaction keeps its row locks; the server
    # ends such a session after this long, so a rescuer never waits on a zombie for long.
    _idle_ms = env_int("DB_IDLE_IN_TRANSACTION_SECONDS", 2 * env_int("COMMAND_LEASE_SECONDS", 60)) * 1000
    DATABASES["default"]["OPTIONS"].setdefault(
        "options", f"-c idle_in_transaction_session_timeout={_idle_ms}"
    )
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A fresh checkout has no ./var yet: SQLite needs the directory of its file to exist.
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# The operator's zone: every page writes times in it, with its abbreviation (an IANA name, e.g. Europe/Berlin).
TIME_ZONE = env_str("TIME_ZONE", "UTC")
# One way to write a time on every page: `2026-11-27 14:03:05 UTC` (project/formats/en/formats.py).
FORMAT_MODULE_PATH = ["project.formats"]
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
try:  # WhiteNoise warns at start-up when the directory is missing (before collectstatic)
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:
    pass
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- security: safe by default, hardened further when DEBUG is off -----------------------
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# /healthz answers plain HTTP probes from load balancers even behind SECURE_SSL_REDIRECT.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# --- Redis and Celery ---------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL)

# Command leases (issue 3): a worker holding a command renews the lease every
# heartbeat; the broker's visibility timeout must outlast the longest lease so Redis
# never redelivers a message that a live worker still holds.
COMMAND_LEASE_SECONDS = env_int("COMMAND_LEASE_SECONDS", 60)
COMMAND_SWEEP_SECONDS = env_int("COMMAND_SWEEP_SECONDS", 15)
# A worker checks its pool processes this often; one that died (SIGKILL, the OOM killer) has its
# work relaunched at once, not after its lease (project.celery, ADR 0008).
WORKER_POOL_CHECK_SECONDS = env_int("WORKER_POOL_CHECK_SECONDS", 1)
# A worker trusts a database connection its previous task used less than this long ago (ADR 0040).
DB_HEALTH_CHECK_IDLE_SECONDS = env_float("DB_HEALTH_CHECK_IDLE_SECONDS", 1.0)
# A worker that took no task this long while messages waited for its free processes stops
# (exit 70) for its supervisor to start it again (project.worker_watchdog); 0: never.
WORKER_STALL_SECONDS = env_int("WORKER_STALL_SECONDS", 120)
BROKER_VISIBILITY_TIMEOUT = env_int("BROKER_VISIBILITY_TIMEOUT", 3600)
# After a command commits, the same worker may run its key's next head (same command class)
# directly, up to this many commands and this long, before ringing it instead (fairness).
COMMAND_DRAIN_MAX = env_int("COMMAND_DRAIN_MAX", 16)
COMMAND_DRAIN_QUANTUM_MS = env_int("COMMAND_DRAIN_QUANTUM_MS", 20)
# SQLite: a writer waiting for the database lock tries again this often (microseconds) and a
# draining worker lets it in first, instead of SQLite's 1-100 ms backoff (0: SQLite's own).
COMMAND_SQLITE_BUSY_POLL_US = env_int("COMMAND_SQLITE_BUSY_POLL_US", 200)
# PostgreSQL: the engine's claim and completion statements are prepared once per connection.
# Turn off behind a transaction-mode connection pooler that cannot keep prepared statements.
COMMAND_PREPARED_STATEMENTS = env_bool("COMMAND_PREPARED_STATEMENTS", True)
# A head whose doorbell was sent but which has not started after this long is rung again.
COMMAND_RING_STALE_SECONDS = env_int("COMMAND_RING_STALE_SECONDS", 30)
# Celery tasks users may run (kernel.user_tasks): `task:<name>` applications, workflows' <celery>
# actions and keyed jobs, glob patterns on task names, checked at submission and in the worker.
# Internal tasks (celery.*, the apps' own, commands) are refused whatever this says. The example
# tasks are not in the default: the walk-throughs (docs/coordinators.md) set ALLOWED_TASKS=examples.* where they
# run. KEYED_JOB_ALLOWED_TASKS is this setting's earlier name, still read when ALLOWED_TASKS is unset.
ALLOWED_TASKS = env_list("ALLOWED_TASKS", env_list("KEYED_JOB_ALLOWED_TASKS", ["actions.*"]))
# Extra modules every worker imports (tasks of plug-ins, or of the test suite).
CELERY_IMPORTS = env_list("EXTRA_TASK_MODULES", ["examples.tasks"])
# Coordinator runtime: how far ahead actions are created, how often services scan, input checks.
COORD_MATERIALIZATION_LOOKAHEAD_SECONDS = env_int("COORD_MATERIALIZATION_LOOKAHEAD_SECONDS", 300)
COORD_MATERIALIZATION_CHUNK = env_int("COORD_MATERIALIZATION_CHUNK", 500)
COORD_INPUT_CHECK_SECONDS = env_int("COORD_INPUT_CHECK_SECONDS", 60)
# The backoff between input checks of one action stops here: 60 s, Oozie's requeue interval (ADR 0018).
COORD_INPUT_CHECK_MAX_SECONDS = env_int("COORD_INPUT_CHECK_MAX_SECONDS", 60)
STATUS_SERVICE_SECONDS = env_int("STATUS_SERVICE_SECONDS", 10)
# Bundles are started at their kick-off time by a wake-up the tick arms (ADR 0017); two such
# wake-ups are at least this far apart, so a kick-off is late by at most this much.
BUNDLE_KICKOFF_SECONDS = env_int("BUNDLE_KICKOFF_SECONDS", 1)
# Actions are created ahead of time (look-ahead); their input checks run at their due time,
# woken between ticks (ADR 0017) at most this often, so this bounds the start latency.
COORD_INPUT_TICK_SECONDS = env_int("COORD_INPUT_TICK_SECONDS", 1)
# Input checks one command runs (an action's next check may be due in the next chunk's command).
COORD_INPUT_CHECK_CHUNK = env_int("COORD_INPUT_CHECK_CHUNK", 200)
# Due start (ADR 0026): at their nominal time the due actions of many jobs are checked and started
# in one transaction per chunk of this many jobs, instead of one input-check command per job, by
# up to COORD_DUE_START_PARALLEL worker processes at once. Jobs whose commands are busy,
# LAST_ONLY/NONE jobs, input logic and coord:latest/future keep the per-job commands; false
# sends every job through them.
COORD_DUE_START = env_bool("COORD_DUE_START", True)
COORD_DUE_START_CHUNK = env_int("COORD_DUE_START_CHUNK", 100)
COORD_DUE_START_PARALLEL = env_int("COORD_DUE_START_PARALLEL", 2)
# A run's end settles its action by compare-and-set in the run's own transaction when no command
# holds the action (ADR 0027); false reports every end through a CoordActionStatusXCommand.
COORD_SETTLE_ON_END = env_bool("COORD_SETTLE_ON_END", True)
# execution NONE: an action this many minutes past its nominal time is SKIPPED.
COORD_EXECUTION_NONE_TOLERANCE_MINUTES = env_int("COORD_EXECUTION_NONE_TOLERANCE_MINUTES", 1)
# Recovery: a pending flag or an action nobody heard of for this long is looked at again.
COORD_RECOVERY_SECONDS = env_int("COORD_RECOVERY_SECONDS", 120)
# Workflow runs (what actions launch): a running node holds a lease renewed by its worker's
# heartbeat; once it lapses (worker killed or stalled) the node is launched again, at most
# WORKFLOW_MAX_LAUNCHES times in all (launches after transient errors count too). A message nobody claimed is sent again after
# WORKFLOW_RESEND_SECONDS, doubling up to WORKFLOW_RESEND_MAX_SECONDS. A worker that cannot
# reach the database keeps trying to record an outcome for WORKFLOW_REPORT_RETRY_SECONDS.
WORKFLOW_LEASE_SECONDS = env_int("WORKFLOW_LEASE_SECONDS", COMMAND_LEASE_SECONDS)
WORKFLOW_MAX_LAUNCHES = env_int("WORKFLOW_MAX_LAUNCHES", 3)
WORKFLOW_RESEND_SECONDS = env_int("WORKFLOW_RESEND_SECONDS", 60)
WORKFLOW_RESEND_MAX_SECONDS = env_int("WORKFLOW_RESEND_MAX_SECONDS", 600)
WORKFLOW_REPORT_RETRY_SECONDS = env_int("WORKFLOW_REPORT_RETRY_SECONDS", 600)
# A task that raises an infrastructure error (database or broker connection lost, a timeout)
# is launched again while launches remain; false: every exception is the task's final error.
WORKFLOW_RETRY_TRANSIENT_ERRORS = env_bool("WORKFLOW_RETRY_TRANSIENT_ERRORS", True)
# Hosts the server may send requests to at a user's word (notification URLs, http(s) batch
# payloads): `hooks.example.com`, `*.example.com`, `10.0.0.0/8`, `127.0.0.1:8080`, `[::1]:8080`.
# Empty: none. Loopback and link-local answers need an IP entry naming them (kernel.outbound).
OUTBOUND_ALLOWED_HOSTS = env_list("OUTBOUND_ALLOWED_HOSTS", [])
# Workflow notifications (oozie.wf.workflow.notification.url, oozie.wf.action.notification.url):
# each HTTP GET is tried again WORKFLOW_NOTIFICATION_RETRIES times, WORKFLOW_NOTIFICATION_RETRY_SECONDS apart.
WORKFLOW_NOTIFICATION_RETRIES = env_int("WORKFLOW_NOTIFICATION_RETRIES", 3)
WORKFLOW_NOTIFICATION_RETRY_SECONDS = env_int("WORKFLOW_NOTIFICATION_RETRY_SECONDS", 10)
# An action's retry-interval is in minutes (Oozie); tests shorten the unit.
WORKFLOW_RETRY_INTERVAL_UNIT_SECONDS = env_int("WORKFLOW_RETRY_INTERVAL_UNIT_SECONDS", 60)
# Workflow actions (ADR 0022). Storage a workflow touches (fs actions, prepare, fs: functions,
# e-mail attachments) lies under WORKFLOW_FS_ROOTS: workers act with the service's rights.
# Shell actions run programs on the workers: off unless enabled; killed after the timeout.
# Action data (captured stdout, a Celery action's returned map) is at most this many bytes.
WORKFLOW_FS_ROOTS = env_list(
    "WORKFLOW_FS_ROOTS", [f"file://{VAR_DIR / 'data'}", "file:///tmp", "memory://", "s3://", "hdfs://"]
)
WORKFLOW_SHELL_ENABLED = env_bool("WORKFLOW_SHELL_ENABLED", False)
WORKFLOW_SHELL_TIMEOUT_SECONDS = env_int("WORKFLOW_SHELL_TIMEOUT_SECONDS", 3600)
WORKFLOW_MAX_OUTPUT_DATA = env_int("WORKFLOW_MAX_OUTPUT_DATA", 2048)
# Site action types (workflows.actions.site, ADR 0034): {namespace: "package.module.Class" or None},
# over the built-in ssh-action 0.1/0.2 and distcp-action 1.0; None switches a namespace off.
WORKFLOW_ACTION_TYPES: dict[str, str | None] = {}
# ssh actions log in with the operator's key (never a password in the XML), through OpenSSH's
# client in batch mode; more client options (Port=2222, UserKnownHostsFile=...) in WORKFLOW_SSH_OPTIONS.
WORKFLOW_SSH_KEY_FILE = env_str("WORKFLOW_SSH_KEY_FILE", "")
WORKFLOW_SSH_STRICT_HOST_KEY_CHECKING = env_str("WORKFLOW_SSH_STRICT_HOST_KEY_CHECKING", "yes")
WORKFLOW_SSH_OPTIONS = env_list("WORKFLOW_SSH_OPTIONS", [])
WORKFLOW_SSH_TIMEOUT_SECONDS = env_int("WORKFLOW_SSH_TIMEOUT_SECONDS", 3600)
WORKFLOW_SSH_ALLOW_USER_AT_HOST = env_bool("WORKFLOW_SSH_ALLOW_USER_AT_HOST", True)
# Reads of jobs by users who may not modify them (owner, ACL, admins): allowed unless true.
COORD_RESTRICT_READS = env_bool("COORD_RESTRICT_READS", False)
# Secret job properties (kernel.secrets): names matching these globs (case-insensitive) are shown
# masked, and their values masked in free text, to readers other than the owner and job admins.
SECRET_PROPERTY_PATTERNS = env_list("SECRET_PROPERTY_PATTERNS", ["*password*", "*secret*", "*token*", "*.key"])
# How many dataset instances one data-in may resolve to (a hostile coord:current(-1000000000)
# range is refused by name instead of exhausting memory).
COORD_MAX_INSTANCES_PER_INPUT = env_int("COORD_MAX_INSTANCES_PER_INPUT", 10_000)
# Where API submissions may read applications and <include>d files from (the CLI reads what its
# user can): local directories and URI prefixes; a bare "s3://" allows a whole protocol.
COORD_APPLICATION_ROOTS = env_list(
    "COORD_APPLICATION_ROOTS",
    [f"file://{BASE_DIR / 'examples'}", f"file://{VAR_DIR / 'apps'}", "memory://", "s3://", "hdfs://"],
)
# Storage URIs of migrated applications (kernel.storage.map_uri): `from=to` prefix pairs, the longest
# matching prefix wins, applied wherever a URI is read or written (application paths, includes,
# datasets and done-flags, fs actions and fs: functions, sub-workflows); what a URI maps to is
# then checked against the roots above and below like any other URI.
# STORAGE_URI_MAP="hdfs://namenode:8020=file:///srv/hdfs,hdfs://nn2=s3://bucket/prefix"
STORAGE_URI_MAP = env_uri_map("STORAGE_URI_MAP")
# Where submitted coordinators may read <include>d dataset files from (no http(s): no SSRF).
COORD_INCLUDE_PROTOCOLS = env_list("COORD_INCLUDE_PROTOCOLS", ["file", "memory", "s3", "hdfs"])
# Batches (ingest): how many stages run at once (each job takes a slot per stage, lowest
# priority number first), where jobs download to, what submissions may read.
BATCH_SLOTS = env_int("BATCH_SLOTS", 8)
BATCH_CHAIN_STAGES = env_bool("BATCH_CHAIN_STAGES", True)  # a job keeps its slot for its next stage while no better job waits
# How old a read of the best runnable job a chained stage may go on from (the job's load and each
# record read it anyway; older, it is read again): a better job waits at most this long for a slot.
BATCH_CHAIN_HEAD_SECONDS = env_float("BATCH_CHAIN_HEAD_SECONDS", 0.02)
BATCH_WORK_ROOT = env_str("BATCH_WORK_ROOT", str(VAR_DIR / "ingest"))
# API submissions read payloads only under these roots (the CLI reads what its user can);
# http(s) payloads only when BATCH_ALLOW_HTTP (the server then fetches what submitters name).
BATCH_PAYLOAD_ROOTS = env_list(
    "BATCH_PAYLOAD_ROOTS", [f"file://{BASE_DIR / 'examples'}", f"file://{VAR_DIR / 'deposits'}", "memory://", "s3://"],
)
BATCH_PAYLOAD_PROTOCOLS = env_list("BATCH_PAYLOAD_PROTOCOLS", ["file", "memory", "s3"])
BATCH_ALLOW_HTTP = env_bool("BATCH_ALLOW_HTTP", False)
BATCH_MANIFEST_MAX_BYTES = env_int("BATCH_MANIFEST_MAX_BYTES", 16 * 1024 * 1024)
BATCH_DOWNLOAD_RETRIES = env_int("BATCH_DOWNLOAD_RETRIES", 3)
BATCH_DOWNLOAD_PARALLELISM = env_int("BATCH_DOWNLOAD_PARALLELISM", 4)
BATCH_HTTP_TIMEOUT_SECONDS = env_int("BATCH_HTTP_TIMEOUT_SECONDS", 30)
# Defaults of the admin-editable ingest settings (the first read stores them in the database).
BATCH_RESERVE_BYTES = env_int("BATCH_RESERVE_BYTES", 256 * 1024 * 1024)
BATCH_PROVISION_SLEEP_SECONDS = env_int("BATCH_PROVISION_SLEEP_SECONDS", 5)
BATCH_LARGE_JOB_BYTES = env_int("BATCH_LARGE_JOB_BYTES", 10 * 1024**3)
BATCH_LARGE_JOB_PRIORITY = env_int("BATCH_LARGE_JOB_PRIORITY", 10)
# Completed batches (rows, reports, working directories) are removed after this many days.
BATCH_RETENTION_DAYS = env_int("BATCH_RETENTION_DAYS", 30)
# Free slots are filled at every tick; provisioning jobs whose wait ends are woken at that
# time, the wake-ups at least this far apart.
BATCH_DISPATCH_SECONDS = env_int("BATCH_DISPATCH_SECONDS", 1)
# Finished commands (the engine's history) are kept this long.
COMMAND_HISTORY_DAYS = env_int("COMMAND_HISTORY_DAYS", 30)
# Every try of a node, batch stage and command keeps what it logged and printed and its error's
# traceback (kernel.tries, the admin's "Tries", `job -log`): at most this many characters of
# each (the tail is kept, the cut said), records at TRY_LOG_LEVEL and above, for this many days.
TRY_LOG_MAX_CHARS = env_int("TRY_LOG_MAX_CHARS", 64 * 1024)
TRY_TRACEBACK_MAX_CHARS = env_int("TRY_TRACEBACK_MAX_CHARS", 16 * 1024)
TRY_LOG_LEVEL = env_str("TRY_LOG_LEVEL", "INFO")
TRY_LOG_RETENTION_DAYS = env_int("TRY_LOG_RETENTION_DAYS", 30)
# Purge (statusservice.purge, hourly; `manage.py purge`), as Oozie's PurgeService: ended jobs and
# all that is theirs go after these many days (0: never). Workflows: standalone ones (a
# coordinator's runs go with their action or job); a coordinator of a bundle goes with its bundle.
# A coordinator's own old actions go after PURGE_COORDINATOR_DAYS too, its last
# PURGE_KEEP_LAST_ACTIONS kept (PURGE_OLD_COORD_ACTIONS=false: never). PURGE_BATCH jobs (or old
# actions) per transaction; an hourly pass stops starting batches after PURGE_PASS_SECONDS.
PURGE_WORKFLOW_DAYS = env_int("PURGE_WORKFLOW_DAYS", 30)
PURGE_COORDINATOR_DAYS = env_int("PURGE_COORDINATOR_DAYS", 7)
PURGE_BUNDLE_DAYS = env_int("PURGE_BUNDLE_DAYS", 7)
PURGE_OLD_COORD_ACTIONS = env_bool("PURGE_OLD_COORD_ACTIONS", True)
PURGE_KEEP_LAST_ACTIONS = env_int("PURGE_KEEP_LAST_ACTIONS", 100)
PURGE_BATCH = env_int("PURGE_BATCH", 100)
PURGE_PASS_SECONDS = env_int("PURGE_PASS_SECONDS", 120)
# Periodic services (ADR 0017): beat sends one `statusservice.tick` this often and nothing else,
# so an idle service costs one message per tick. The tick runs each service whose own period
# came (STATUS_SERVICE_SECONDS, COMMAND_SWEEP_SECONDS, hourly purge) and arms wake-ups at the
# due time of work due before the next tick. A shorter STATUS_SERVICE_SECONDS or
# COMMAND_SWEEP_SECONDS shortens the tick (statusservice.tick.tick_seconds computes the same).
SERVICE_TICK_SECONDS = env_int("SERVICE_TICK_SECONDS", 10)
_TICK = float(max(1, min(SERVICE_TICK_SECONDS, STATUS_SERVICE_SECONDS, COMMAND_SWEEP_SECONDS)))
CELERY_BEAT_SCHEDULE = {
    "services-tick": {"task": "statusservice.tick", "schedule": _TICK, "options": {"expires": _TICK}},
}
# Idle is silent: the tick's and wake-ups' "Sending due task", "received" and "succeeded" lines
# (INFO) are dropped from the beat and worker logs; true logs them again. Failures always show.
LOG_PERIODIC_TASKS = env_bool("LOG_PERIODIC_TASKS", False)
# SLA monitoring (docs/coordinators.md, "SLA monitoring"): e-mails to <sla:alert-contact> for the events its
# <sla:alert-events> name (default below), every event POSTed as JSON to the webhook.
SLA_ALERT_EVENTS = env_list("SLA_ALERT_EVENTS", ["END_MISS"])
SLA_EMAIL_ENABLED = env_bool("SLA_EMAIL_ENABLED", True)
SLA_EMAIL_FROM = env_str("SLA_EMAIL_FROM", "")
# Batch report e-mails' sender (default: DEFAULT_FROM_EMAIL).
BATCH_EMAIL_FROM = env_str("BATCH_EMAIL_FROM", "")
SLA_WEBHOOK_URL = env_str("SLA_WEBHOOK_URL", "")
SLA_WEBHOOK_SECRET = env_str("SLA_WEBHOOK_SECRET", "")
SLA_WEBHOOK_TIMEOUT_SECONDS = env_int("SLA_WEBHOOK_TIMEOUT_SECONDS", 5)
SLA_WEBHOOK_EVENTS = env_list(
    "SLA_WEBHOOK_EVENTS", ["START_MET", "START_MISS", "DURATION_MET", "DURATION_MISS", "END_MET", "END_MISS"]
)
SLA_NOTIFY_MAX_ATTEMPTS = env_int("SLA_NOTIFY_MAX_ATTEMPTS", 8)
SLA_NOTIFY_RETRY_SECONDS = env_int("SLA_NOTIFY_RETRY_SECONDS", 30)
SLA_NOTIFY_RETRY_MAX_SECONDS = env_int("SLA_NOTIFY_RETRY_MAX_SECONDS", 3600)
SLA_NOTIFY_LEASE_SECONDS = env_int("SLA_NOTIFY_LEASE_SECONDS", 120)
SLA_DISABLE_ALERTS_OLDER_THAN_HOURS = env_int("SLA_DISABLE_ALERTS_OLDER_THAN_HOURS", 48)
SLA_ADMIN_BASE_URL = env_str("SLA_ADMIN_BASE_URL", "")
# E-mail (SLA alerts, batch reports): SMTP to EMAIL_HOST; EMAIL_TIMEOUT bounds a dead server.
# Without EMAIL_HOST (or EMAIL_BACKEND) e-mail is not configured: kernel.mail's backend refuses
# every message at once, and SLA alerts are not e-mailed (logged once), never retried on localhost:25.
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "kernel.mail.NotConfiguredBackend"
)
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "scheduler@localhost")

# --- Oozie semantics ----------------------------------------------------------------------
# UTC, or a fixed GMT offset such as GMT+05:30 (coordinator spec, section 4.2).
OOZIE_PROCESSING_TIMEZONE = env_processing_timezone("OOZIE_PROCESSING_TIMEZONE", "UTC")
# Bulk verbs (docs/operations.md): the most jobs one verb may select; an admin selection larger
# than the threshold runs as one operation; how long Oozie's bulk PUT waits for it to finish.
BULK_MAX_JOBS = env_int("BULK_MAX_JOBS", 100_000)
# Where operators open Flower (the dashboard links to it); `manage.py up` sets it for its web server.
FLOWER_URL = env_str("FLOWER_URL", "")
# Live operator pages (docs/coordinators.md, "Live pages"): every so many seconds an open list, dashboard,
# grid, Gantt view or object page fetches itself again and swaps its read-only parts in place; 0: never.
ADMIN_LIVE_SECONDS = env_int("ADMIN_LIVE_SECONDS", 5)
BULK_ADMIN_THRESHOLD = env_int("BULK_ADMIN_THRESHOLD", 20)
OOZIE_BULK_WAIT_SECONDS = env_float("OOZIE_BULK_WAIT_SECONDS", 10.0)
# `oozie job -upload` (POST /oozie/v2/upload, ADR 0036): applications sent with a submission are
# unpacked under OOZIE_UPLOAD_ROOT/<user>/, which must lie under COORD_APPLICATION_ROOTS (else
# uploads are refused); a tar.gz of at most OOZIE_UPLOAD_MAX_BYTES (0: uploads off) holding at most
# OOZIE_UPLOAD_MAX_ENTRIES files and directories and OOZIE_UPLOAD_MAX_UNPACKED_BYTES of contents.
OOZIE_UPLOAD_ROOT = env_str("OOZIE_UPLOAD_ROOT", str(VAR_DIR / "apps" / "uploads"))
OOZIE_UPLOAD_MAX_BYTES = env_int("OOZIE_UPLOAD_MAX_BYTES", 20 * 1024 * 1024)
OOZIE_UPLOAD_MAX_UNPACKED_BYTES = env_int("OOZIE_UPLOAD_MAX_UNPACKED_BYTES", 100 * 1024 * 1024)
OOZIE_UPLOAD_MAX_ENTRIES = env_int("OOZIE_UPLOAD_MAX_ENTRIES", 2000)

# --- Monitoring (ADR 0014) ----------------------------------------------------------------
# /metrics answers `Authorization: Bearer <METRICS_TOKEN>` (when set) and any API user. Its
# command time histograms cover the commands finished in the last METRICS_WINDOW_SECONDS among
# the METRICS_COMMAND_SAMPLE most recently enqueued (a primary-key range: bounded cost).
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_WINDOW_SECONDS = env_int("METRICS_WINDOW_SECONDS", 300)
METRICS_COMMAND_SAMPLE = env_int("METRICS_COMMAND_SAMPLE", 2000)
# Ended coordinator actions are counted by a scan of the whole table: its result is reused this long.
METRICS_ENDED_ACTIONS_SECONDS = env_int("METRICS_ENDED_ACTIONS_SECONDS", 60)

# --- Failed sign-ins and request rates (kernel.auth_guard, docs/configuration.md) ----------
# AUTH_FAILURE_LIMIT failed credential checks (admin login, HTTP basic, API tokens, /metrics) from
# one client address within AUTH_FAILURE_WINDOW_SECONDS lock that address until enough of them have
# left the window: 429 with Retry-After, the right credentials included. AUTH_ACCOUNT_FAILURE_LIMIT
# failures naming one username from any addresses lock that username's password sign-ins the same
# way (against distributed guessing; the price: anyone can lock an account out; API tokens keep
# working). 0 turns a limit off. Counted in the database: every process and host sees the same.
AUTH_FAILURE_LIMIT = env_int("AUTH_FAILURE_LIMIT", 10)
AUTH_FAILURE_WINDOW_SECONDS = env_int("AUTH_FAILURE_WINDOW_SECONDS", 600)
AUTH_ACCOUNT_FAILURE_LIMIT = env_int("AUTH_ACCOUNT_FAILURE_LIMIT", 50)
# Behind a reverse proxy every client has the proxy's REMOTE_ADDR: name the request.META key of the
# header the proxy sets (HTTP_X_FORWARDED_FOR; its right-most address is used). Only behind a proxy
# that always sets it: otherwise clients write it themselves and pick a fresh address per guess.
AUTH_CLIENT_IP_HEADER = env_str("AUTH_CLIENT_IP_HEADER", "")
# DRF throttles of the native API ("120/minute"; empty: none), counted in Django's cache: the
# in-process LocMem cache here, so each gunicorn process counts on its own.
API_ANON_RATE = env_str("API_ANON_RATE", "120/minute")
API_USER_RATE = env_str("API_USER_RATE", "")

# --- REST framework -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # DRF's token authentication, refusing a locked-out client before it looks at the key.
        "kernel.auth_guard.GuardedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # DRF's throttles reading API_ANON_RATE (anonymous callers: the schema and docs) and API_USER_RATE
    # (users: unthrottled while empty) on each request.
    "DEFAULT_THROTTLE_CLASSES": ["kernel.throttles.AnonymousRateThrottle", "kernel.throttles.UserRate"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # DRF's JSON, form and multipart parsers, refusing NUL, lone surrogates and deep nesting (400).
    "DEFAULT_PARSER_CLASSES": [
        "kernel.parsers.StrictJSONParser",
        "kernel.parsers.StrictFormParser",
        "kernel.parsers.StrictMultiPartParser",
    ],
    # limit/offset pages of at most 1000; a negative or non-numeric limit or offset is a 400.
    "DEFAULT_PAGINATION_CLASS": "kernel.pagination.Pagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Scheduler API",
    "DESCRIPTION": "Coordinators, bundles, batches and keyed jobs.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and ReDoc from the pinned drf-spectacular-sidecar package (static files), not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a `status`; name each enum after its entity.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "kernel.api.document_unsupported_media",
    ],
    "ENUM_NAME_OVERRIDES": {
        "CoordinatorJobStatusEnum": "coordinators.choices.JobStatus",
        "CoordinatorActionStatusEnum": "coordinators.choices.ActionStatus",
        "KeyedJobStatusEnum": "xcommands.choices.CommandStatus",
        "BundleJobStatusEnum": "bundles.choices.BundleStatus",
        "BatchStatusEnum": "batches.choices.BatchStatus",
        "BatchJobStatusEnum": "batches.choices.JobStatus",
        "BatchSubmissionTypeEnum": "batches.choices.SubmissionType",
        "ScopeTypeEnum": [("action", "action"), ("date", "date")],  # rerun and ignore scopes
        "WorkflowJobStatusEnum": "workflows.choices.WorkflowStatus",
        "WorkflowNodeStatusEnum": "workflows.choices.NodeStatus",
        "TaskTryKindEnum": [("node", "Node"), ("stage", "Stage"), ("command", "Command")],  # kernel.TaskTry.Kind
        "BatchReportKindEnum": [("initial", "Initial"), ("update", "Update")],  # batches.BatchReport.Kind
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # `tries`: what a running try logs goes to its capture too (kernel.capture; stored per try).
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"},
                 "tries": {"class": "kernel.capture.Router", "level": TRY_LOG_LEVEL}},
    "root": {"handlers": ["console", "tries"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
