"""Skein settings, read from the environment (django-environ).

Two runtime modes (DESIGN.md §2): with ``REDIS_URL`` unset Skein runs *embedded* (SQLite, eager
Celery, in-memory channel layer); with it set, *full* (PostgreSQL from ``DATABASE_URL``, Redis
broker with real workers and beat, channels-redis).
"""

import os
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

# litellm must not fetch its price map at import, and tiktoken must find its encodings offline
# (DESIGN.md §8). Both are read when litellm is first imported, so they are set here.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False) if (BASE_DIR / ".env").exists() else None

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env("SECRET_KEY", default="skein-insecure-development-key-change-me")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"])
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
    "workflows",
    "memory",
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
elif FULL_MODE and env.bool("SKEIN_DB_POOL", default=True):
    # A connection pool per process (psycopg_pool): daphne serves each request in a thread of its
    # own and Celery closes connections after each task, so without it every request and every turn
    # would open a PostgreSQL connection. A turn keeps its connection while it runs (it holds the
    # thread's advisory lock), so a worker's concurrency should not exceed the pool's size.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": env.int("SKEIN_DB_POOL_SIZE", default=32),
        "timeout": env.float("SKEIN_DB_POOL_TIMEOUT_S", default=60.0),
        # A session advisory lock must never outlive its turn on a connection handed to another.
        "reset": lambda connection: connection.execute("SELECT pg_advisory_unlock_all()"),
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = []
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
STATICFILES_DIRS = [FRONTEND_DIST] if FRONTEND_DIST.exists() else []
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
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "workflows.api.errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "workflows.api.parsers.StrictJSONParser",
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
}
# django-celery-beat's database scheduler with a heartbeat (workflows/beat.py), so the web can tell
# whether schedules fire; the embedded server runs it too (workflows/embedded.py).
CELERY_BEAT_SCHEDULER = "workflows.beat:Scheduler"
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
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": SKEIN_NAMESPACE}
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Skein --------------------------------------------------------------------------------------
SKEIN_SUMMARY_TIMEOUT_S = env.float("SKEIN_SUMMARY_TIMEOUT_S", default=45.0)
SKEIN_LLM_TIMEOUT_S = env.float("SKEIN_LLM_TIMEOUT_S", default=120.0)
SKEIN_LLM_RETRIES = env.int("SKEIN_LLM_RETRIES", default=2)
SKEIN_CHAT_WAIT_S = env.float("SKEIN_CHAT_WAIT_S", default=300.0)
SKEIN_WEBHOOK_WAIT_S = env.float("SKEIN_WEBHOOK_WAIT_S", default=30.0)
SKEIN_WEBHOOK_MAX_BYTES = env.int("SKEIN_WEBHOOK_MAX_BYTES", default=256 * 1024)
SKEIN_WEBHOOK_REPLAY_WINDOW_S = env.int("SKEIN_WEBHOOK_REPLAY_WINDOW_S", default=300)
# Fernet key for provider secrets; derived from SECRET_KEY when unset (set it in production).
SKEIN_ENCRYPTION_KEY = env("SKEIN_ENCRYPTION_KEY", default="")

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
