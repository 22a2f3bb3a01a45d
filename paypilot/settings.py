"""PayPilot settings: every value comes from the environment through one `environ.Env`.

Production differs from development only by environment. Unsafe things default to off
and fail closed (see docs/configuration.md, which a test keeps in step with this file).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import sys
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _site_dir() -> Path:
    """Where the project-wide `templates/` and `static/` are: beside the apps in a checkout
    (the design's layout), `<prefix>/share/paypilot/` in an installed wheel (pyproject's
    data-files put them there; `<prefix>` is the one this package was installed under)."""
    if (BASE_DIR / "templates").is_dir():
        return BASE_DIR
    here = Path(__file__).resolve().parents  # <prefix>/lib/pythonX.Y/site-packages/paypilot/
    for prefix in ([here[4]] if len(here) > 4 else []) + [Path(sys.prefix)]:
        if (prefix / "share" / "paypilot" / "templates").is_dir():
            return prefix / "share" / "paypilot"
    return BASE_DIR


SITE_DIR = _site_dir()
FACTS_DIR = Path(os.environ.get("PAYPILOT_FACTS_DIR", BASE_DIR.parent / "shared" / "facts"))

env = environ.Env()
if (BASE_DIR / ".env").is_file():
    env.read_env(str(BASE_DIR / ".env"))

TESTING = "pytest" in sys.modules or env.bool("PAYPILOT_TESTING", default=False)

# --- core -----------------------------------------------------------------------------
DEBUG = env.bool("DJANGO_DEBUG", default=False)
_DEV_SECRET = "paypilot-insecure-development-key-only-for-local-use"
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=_DEV_SECRET)
if SECRET_KEY == _DEV_SECRET and not DEBUG and env.bool("PAYPILOT_REQUIRE_SECRET_KEY", default=False):
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when PAYPILOT_REQUIRE_SECRET_KEY=1")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
PAYPILOT_COMMIT = env.str("PAYPILOT_COMMIT", default="")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc served from installed assets, never a CDN
    "django_q",
    "anymail",
    "paypilot",
    "decisions",
    "ledger",
    "dunning",
    "approvals",
    "integrations",
    "reconciliation",  # three-way reconciliation; depends on the core only
    "operations",  # GDPR export/erase, retention: below every app, reads them all
]

# Lean on purpose: each middleware costs throughput on the hot API paths.
MIDDLEWARE = [
    "paypilot.middleware.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # serves /static/ under gunicorn
    "paypilot.middleware.RateLimitMiddleware",
    # Django's session, auth and messages middleware, skipped for views marked @lean_route
    # (the provider webhooks, which authenticate by signature): paypilot.lean_routes.
    "paypilot.lean_routes.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",  # by name for check --deploy; lean routes are exempt
    "paypilot.lean_routes.AuthenticationMiddleware",
    "paypilot.lean_routes.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Innermost: one transaction per view on PostgreSQL, carrying the tenant for RLS.
    "paypilot.tenancy.TenantTransactionMiddleware",
]

ROOT_URLCONF = "paypilot.urls"
WSGI_APPLICATION = "paypilot.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [SITE_DIR / "templates"],  # project-wide, first, so the admin overrides win
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

# --- storage ----------------------------------------------------------------------------
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers proceed during a write; IMMEDIATE takes the write lock at BEGIN so
    # concurrent writers queue on busy_timeout instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;"
            ),
        }
    )
    # Keep each thread's connection: reopening it runs the PRAGMAs above on every request.
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
    # A SELECT 1 before each request's first query finds a connection the server dropped
    # (restart, failover) before a request fails on it; about 0.1 ms per request.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_CONN_HEALTH_CHECKS", default=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Past one PostgreSQL (docs/scaling.md): migration paypilot 0007 partitions the webhook
# events by tenant bucket, task results by month and the reconciliation rows by month and
# tenant bucket (paypilot.partitioning). Read only when that migration runs; PostgreSQL only.
PAYPILOT_PARTITIONING = env.bool("PAYPILOT_PARTITIONING", default=False)
PAYPILOT_PARTITION_TENANT_BUCKETS = env.int("PAYPILOT_PARTITION_TENANT_BUCKETS", default=8)
if not 1 <= PAYPILOT_PARTITION_TENANT_BUCKETS <= 256:
    raise ImproperlyConfigured("PAYPILOT_PARTITION_TENANT_BUCKETS must be 1-256")

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://paypilot")}

# --- django-q2 --------------------------------------------------------------------------
Q_TIMEOUT = env.int("PAYPILOT_Q_TIMEOUT", default=60)
Q_CLUSTER: dict[str, object] = {
    "name": "paypilot",
    "workers": env.int("PAYPILOT_Q_WORKERS", default=2),
    "timeout": Q_TIMEOUT,
    "retry": Q_TIMEOUT + 30,  # must exceed timeout or a slow task runs twice at once
    "max_attempts": env.int("PAYPILOT_Q_MAX_ATTEMPTS", default=5),
    # Successful task results kept in django_q_task. django-q2 prunes above a positive limit
    # by locking every kept success row (SELECT ... FOR UPDATE) after each task, which is
    # most of a drain's cost on PostgreSQL (docs/benchmarks.md); 0 keeps every success, -1
    # none (failures are always kept).
    "save_limit": env.int("PAYPILOT_Q_SAVE_LIMIT", default=1000),
    "catch_up": False,
    "label": "Tasks",
    # Tasks per broker read. 1: a webhook batch deletes the queue rows of the events it
    # applied (integrations.services.processing), which only saves work for rows not yet
    # read; a read of 50 took those tasks out before the batch could delete them
    # (docs/benchmarks.md, the drain: 168 -> 281 deliveries per cluster CPU-second).
    "bulk": env.int("PAYPILOT_Q_BULK", default=1),
    # Tasks before a worker process is replaced. django-q2's default, 500, replaced a worker
    # every ten webhook batches, each new one loading the rules, templates and a connection
    # again: the PostgreSQL drain ran at 352/s with 500 and 483/s with 5,000 (benchmarks.md).
    "recycle": env.int("PAYPILOT_Q_RECYCLE", default=5000),
    # Tasks handed to the workers ahead of time (django-q2's default: workers squared). A
    # stopping cluster runs these too before it exits, so one each bounds the stop
    # (`manage.py run_workers`, PAYPILOT_WORKER_STOP_GRACE).
    "queue_limit": env.int("PAYPILOT_Q_WORKERS", default=2),  # = workers
    "sync": TESTING or env.bool("PAYPILOT_Q_SYNC", default=False),
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["broker_class"] = "paypilot.queue.OrmBroker"  # fewer round trips per task
# The cluster's heartbeat (django-q2 stats) lives in a cache every web process can read:
# Redis when there is one, else files on this machine (the embedded single-host set-up).
CACHES["workers"] = (
    {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL} if REDIS_URL else
    {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
     "LOCATION": str(env.path("PAYPILOT_WORKER_STATS_DIR", default=BASE_DIR / "var" / "worker-stats"))}
)
Q_CLUSTER["cache"] = "workers"
# /health says "stale" once a due task has waited this long with a cluster running; with
# PAYPILOT_HEALTH_REQUIRE_WORKERS on, /health answers 503 unless the workers are "ok".
PAYPILOT_WORKERS_STALE_SECONDS = env.int("PAYPILOT_WORKERS_STALE_SECONDS", default=60)
# Seconds a process keeps a tenant's active rules table before reading it again; activation
# clears it at once in the activating process, others follow within this many seconds.
PAYPILOT_RULES_CACHE_SECONDS = env.int("PAYPILOT_RULES_CACHE_SECONDS", default=10)
PAYPILOT_HEALTH_REQUIRE_WORKERS = env.bool("PAYPILOT_HEALTH_REQUIRE_WORKERS", default=False)
# Seconds `manage.py run_workers` (the Procfile's worker) gives a stopping cluster to finish
# the tasks in hand before it is killed; `manage.py serve` waits this long plus 2 s.
PAYPILOT_WORKER_STOP_GRACE = env.float("PAYPILOT_WORKER_STOP_GRACE", default=4.0)
if int(Q_CLUSTER["retry"]) <= int(Q_CLUSTER["timeout"]):  # type: ignore[call-overload]
    raise ImproperlyConfigured("Q_CLUSTER retry must be greater than timeout")

# --- auth, sessions, security -------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# PAYPILOT_TLS=1: the service is only reached over HTTPS. It turns on the HTTPS redirect,
# secure cookies and a year of HSTS by default (each still settable on its own).
PAYPILOT_TLS = env.bool("PAYPILOT_TLS", default=False)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=PAYPILOT_TLS)
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=PAYPILOT_TLS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31_536_000 if PAYPILOT_TLS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("DJANGO_BEHIND_TLS_PROXY", default=False) else None
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [SITE_DIR / "static"]  # project-wide; each app's own are in <app>/static/
STATIC_ROOT = env.path("DJANGO_STATIC_ROOT", default=BASE_DIR / "var" / "static")

# --- logging: one JSON line per request on the paypilot.access logger ---------------------
LOG_LEVEL = env.str("PAYPILOT_LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(message)s"}},
    "filters": {
        "pii": {"()": "paypilot.logsafe.PiiLogFilter"},  # e-mails hashed, extras allowlisted
        "request_error": {"()": "paypilot.logsafe.RequestErrorFilter"},  # request id, redacted traceback
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["pii"]},
        "stderr_errors": {"class": "logging.StreamHandler", "formatter": "plain",
                          "filters": ["request_error", "pii"]},
    },
    "loggers": {
        # Django logs every 5xx here with its traceback; without a handler nothing was written.
        "django.request": {"handlers": ["stderr_errors"], "level": "ERROR", "propagate": False},
        "paypilot": {"handlers": ["stderr"], "level": LOG_LEVEL, "propagate": False},
        "django_q": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        # django-q2 logs under "django-q" (one INFO line per enqueued task otherwise).
        "django-q": {"handlers": ["stderr"], "level": LOG_LEVEL if LOG_LEVEL != "INFO" else "WARNING",
                     "propagate": False},
    },
}

# --- REST API ---------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["paypilot.auth.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["paypilot.jsonlimits.StrictJSONParser"],
    "EXCEPTION_HANDLER": "paypilot.api.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "PayPilot API",
    "DESCRIPTION": "Failed-payment recovery: decisions, recovery plans, reports.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {"ReportedOutcomeEnum": ["paid", "not_paid"],
                            "LatestOutcomeEnum": ["paid", "not_paid", "unknown"]},
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "paypilot.schema.error_responses",
                            "paypilot.schema.closed_request_bodies"],
}

# Input limits (paypilot.jsonlimits): a declared body past PAYPILOT_MAX_BODY_BYTES gets a JSON
# 413 before anything reads it; JSON nested deeper than PAYPILOT_JSON_MAX_DEPTH gets a 400
# before the (recursive) parser sees it. /decide keeps its own 4 KiB cap.
PAYPILOT_MAX_BODY_BYTES = env.int("PAYPILOT_MAX_BODY_BYTES", default=2_621_440)
PAYPILOT_JSON_MAX_DEPTH = env.int("PAYPILOT_JSON_MAX_DEPTH", default=64)
if PAYPILOT_MAX_BODY_BYTES < 4096 or not 8 <= PAYPILOT_JSON_MAX_DEPTH <= 512:
    raise ImproperlyConfigured("PAYPILOT_MAX_BODY_BYTES must be >= 4096 and PAYPILOT_JSON_MAX_DEPTH 8-512")
DATA_UPLOAD_MAX_MEMORY_SIZE = PAYPILOT_MAX_BODY_BYTES
# Seconds a client is told to wait (Retry-After) when the database is unreachable (503).
PAYPILOT_DB_RETRY_AFTER_SECONDS = env.int("PAYPILOT_DB_RETRY_AFTER_SECONDS", default=5)

# Rate limits: requests per window, per bearer token and per client IP.
PAYPILOT_RATE_LIMIT_PER_TOKEN = env.int("PAYPILOT_RATE_LIMIT_PER_TOKEN", default=600)
PAYPILOT_RATE_LIMIT_PER_IP = env.int("PAYPILOT_RATE_LIMIT_PER_IP", default=1200)
PAYPILOT_RATE_LIMIT_WINDOW_SECONDS = env.int("PAYPILOT_RATE_LIMIT_WINDOW_SECONDS", default=60)
# Counters shared by every process (paypilot.ratelimit): Redis keys with REDIS_URL, else
# append-only files here (the test suite points it at its own temporary directory).
# Memory (/dev/shm) when the machine has it: counters need no durability, and creating a
# file there cost 0.07 ms against 3 ms on this machine's disk under load. Named after the
# install path, so two installs on one machine never share a count.
_SHM = Path("/dev/shm")
PAYPILOT_RATE_LIMIT_DIR = env.path(
    "PAYPILOT_RATE_LIMIT_DIR",
    default=(_SHM / f"paypilot-rl-{hashlib.sha256(str(BASE_DIR).encode()).hexdigest()[:12]}"
             if _SHM.is_dir() else BASE_DIR / "var" / "ratelimit"),
)
# Networks of the reverse proxies whose X-Forwarded-For is believed (e.g. 10.0.0.0/8); empty
# means none: the client is REMOTE_ADDR.
PAYPILOT_TRUSTED_PROXIES = env.list("PAYPILOT_TRUSTED_PROXIES", default=[])
for _entry in PAYPILOT_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_entry, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"PAYPILOT_TRUSTED_PROXIES: {_exc}") from _exc
# Webhook deliveries that fail verification, per window: past these the answer is 429 with
# nothing audited or stored. A delivery whose signature verifies is never limited.
PAYPILOT_WEBHOOK_FAILURES_PER_IP = env.int("PAYPILOT_WEBHOOK_FAILURES_PER_IP", default=60)
PAYPILOT_WEBHOOK_FAILURES_PER_TENANT = env.int("PAYPILOT_WEBHOOK_FAILURES_PER_TENANT", default=300)
# Admin login lockout: failed logins per account and per client address within the window.
PAYPILOT_LOGIN_FAILURES_PER_ACCOUNT = env.int("PAYPILOT_LOGIN_FAILURES_PER_ACCOUNT", default=5)
PAYPILOT_LOGIN_FAILURES_PER_IP = env.int("PAYPILOT_LOGIN_FAILURES_PER_IP", default=20)
PAYPILOT_LOGIN_LOCKOUT_SECONDS = env.int("PAYPILOT_LOGIN_LOCKOUT_SECONDS", default=900)

# --- PayPilot ---------------------------------------------------------------------------
PAYPILOT_DEFAULT_TENANT = env.str("PAYPILOT_DEFAULT_TENANT", default="demo")
PAYPILOT_DEMO_TENANT = env.str("PAYPILOT_DEMO_TENANT", default="demo")
PAYPILOT_BUSINESS_NAME = env.str("PAYPILOT_BUSINESS_NAME", default="")
PAYPILOT_PUBLIC_BASE_URL = env.str("PAYPILOT_PUBLIC_BASE_URL", default="http://127.0.0.1:8000")
PAYPILOT_PII_SALT = env.str("PAYPILOT_PII_SALT", default="")

# Ledger
PAYPILOT_HOLDOUT_PCT = max(0, min(100, env.int("PAYPILOT_HOLDOUT_PCT", default=0)))
PAYPILOT_HOLDOUT_SEED = env.str("PAYPILOT_HOLDOUT_SEED", default="paypilot")
PAYPILOT_REPORT_WINDOW_DAYS = env.int("PAYPILOT_REPORT_WINDOW_DAYS", default=30)
if not 1 <= PAYPILOT_REPORT_WINDOW_DAYS <= 365:  # the rollup's delay buckets end at 366 days
    raise ImproperlyConfigured("PAYPILOT_REPORT_WINDOW_DAYS must be between 1 and 365")

# Dunning
PAYPILOT_LLM_DRAFT = env.bool("PAYPILOT_LLM_DRAFT", default=False)
PAYPILOT_LLM_MODEL = env.str("PAYPILOT_LLM_MODEL", default="gpt-4o-mini")
PAYPILOT_EMBEDDING_MODEL = env.str("PAYPILOT_EMBEDDING_MODEL", default="text-embedding-3-small")
PAYPILOT_LLM_BUDGET_USD = env.float("PAYPILOT_LLM_BUDGET_USD", default=0.0)  # 0 means no cap
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")

# Integrations
PAYPILOT_ALLOW_UNSIGNED_WEBHOOKS = env.bool("PAYPILOT_ALLOW_UNSIGNED_WEBHOOKS", default=False)
PAYPILOT_SECRETS_KEY = env.str("PAYPILOT_SECRETS_KEY", default="")  # Fernet key for provider secrets
PAYPILOT_LINK_ALLOWED_HOSTS = env.list(
    "PAYPILOT_LINK_ALLOWED_HOSTS",
    default=["billing.stripe.com", "invoice.stripe.com", "pay.stripe.com"],
)
PAYPILOT_LINK_TTL_DAYS = env.int("PAYPILOT_LINK_TTL_DAYS", default=30)
PAYPILOT_SWEEP_AFTER_MINUTES = env.int("PAYPILOT_SWEEP_AFTER_MINUTES", default=5)
# Events one processing task applies in one transaction (its own plus received ones queued
# behind it); 1 applies each event alone.
PAYPILOT_WEBHOOK_BATCH = env.int("PAYPILOT_WEBHOOK_BATCH", default=50)
if PAYPILOT_WEBHOOK_BATCH < 1:
    raise ImproperlyConfigured("PAYPILOT_WEBHOOK_BATCH must be at least 1")

# Approvals and sending
PAYPILOT_APPROVAL_TTL_HOURS = env.int("PAYPILOT_APPROVAL_TTL_HOURS", default=48)
PAYPILOT_SEND_EMAIL = env.bool("PAYPILOT_SEND_EMAIL", default=False)
PAYPILOT_ALLOWED_RECIPIENTS = env.list("PAYPILOT_ALLOWED_RECIPIENTS", default=[])
PAYPILOT_MAX_TOUCHES = env.int("PAYPILOT_MAX_TOUCHES", default=3)
PAYPILOT_SEND_COOLDOWN_HOURS = env.int("PAYPILOT_SEND_COOLDOWN_HOURS", default=24)
PAYPILOT_AI_DISCLOSURE = env.str("PAYPILOT_AI_DISCLOSURE", default="")
PAYPILOT_HIGH_VALUE_ANNUAL = env.int("PAYPILOT_HIGH_VALUE_ANNUAL", default=0)  # major units; 0 = off
# Seconds after which a send still `sending` is taken for its dead sender's (SIGKILL, OOM,
# a lost machine). Above PAYPILOT_Q_TIMEOUT, after which django-q2 kills a live task anyway.
PAYPILOT_SEND_CLAIM_TIMEOUT = env.int("PAYPILOT_SEND_CLAIM_TIMEOUT", default=300)
if PAYPILOT_SEND_CLAIM_TIMEOUT <= Q_TIMEOUT:
    raise ImproperlyConfigured("PAYPILOT_SEND_CLAIM_TIMEOUT must be greater than PAYPILOT_Q_TIMEOUT")
# The approvers' digest (approvals/digest.py): the UTC hour from which the daily one goes out.
PAYPILOT_DIGEST_DAILY_HOUR = env.int("PAYPILOT_DIGEST_DAILY_HOUR", default=7)
if not 0 <= PAYPILOT_DIGEST_DAILY_HOUR <= 23:
    raise ImproperlyConfigured("PAYPILOT_DIGEST_DAILY_HOUR must be an hour from 0 to 23 (UTC)")
PAYPILOT_SEND_FALLBACK_DIR = env.path("PAYPILOT_SEND_FALLBACK_DIR", default=BASE_DIR / "var" / "send-fallback")
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="billing@example.com")
ANYMAIL = env.dict("ANYMAIL", default={})

# Operations
PAYPILOT_RETENTION_MONTHS = env.int("PAYPILOT_RETENTION_MONTHS", default=12)
PAYPILOT_WEBHOOK_BODY_DAYS = env.int("PAYPILOT_WEBHOOK_BODY_DAYS", default=30)

# Reconciliation (docs/reconciliation.md)
PAYPILOT_RECON_MAX_FILE_BYTES = env.int("PAYPILOT_RECON_MAX_FILE_BYTES", default=20 * 1024 * 1024)
# A large CSV is read by the columnar reader this many bytes at a time (cut at a record
# end, the header repeated): an import's memory follows the slice, not the file.
PAYPILOT_RECON_IMPORT_SLICE_BYTES = env.int("PAYPILOT_RECON_IMPORT_SLICE_BYTES", default=16 * 1024 * 1024)
# The one directory the MCP tools preview_file / import_file may read a `path` from (stdio
# only; symlinks and `..` resolved first). Empty: no path is read at all, content only.
PAYPILOT_MCP_FILE_ROOT = env.str("PAYPILOT_MCP_FILE_ROOT", default="")
PAYPILOT_RECON_DATE_WINDOW_DAYS = env.int("PAYPILOT_RECON_DATE_WINDOW_DAYS", default=3)
# `recon_layout suggest` also asks the chat model (the dunning.llm seam, which must be on too).
PAYPILOT_RECON_LAYOUT_LLM = env.bool("PAYPILOT_RECON_LAYOUT_LLM", default=False)
