# Skein: one image for web (daphne), worker and beat.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True
RUN apt-get update && apt-get install -y --no-install-recommends build-essential && rm -rf /var/lib/apt/lists/*
WORKDIR /app

COPY pyproject.toml ./
COPY config ./config
COPY workflows ./workflows
COPY memory ./memory
# llama-cpp-python compiles here: only what Skein loads (as the Makefile's CMAKE_ARGS).
ENV CMAKE_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=/app/config/llama_cpp_build.cmake"
RUN pip install '.[build]'

COPY frontend ./frontend
RUN if [ -f frontend/package.json ]; then cd frontend && npm ci --no-audit --no-fund && npm run build; fi; \
    if [ -f frontend/widget/package.json ]; then cd frontend/widget && npm ci --no-audit --no-fund && npm run build; fi
COPY manage.py ./
RUN SECRET_KEY=build python manage.py collectstatic --noinput

EXPOSE 8000
CMD ["daphne", "-e", "tcp:port=8000:interface=0.0.0.0:backlog=1024", "config.asgi:application"]
