# One image for web, workers, beat, the release step and the sandbox; the command differs per service.
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends graphviz libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Production packages only, every file checked against its hash (scripts/lock_prod.py). torch is the
# CPU build, found on the index below; the default index would bring the CUDA build, gigabytes more.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
COPY requirements-prod.lock .
RUN pip install --no-cache-dir --require-hashes --no-deps --extra-index-url "$TORCH_INDEX_URL" \
        -r requirements-prod.lock
COPY . .
ENV DJANGO_SETTINGS_MODULE=config.settings DEBUG=0
RUN SECRET_KEY=build python manage.py collectstatic --noinput
# Web, workers, beat and the release step run as this user; only the sandbox service runs as root
# (docker-compose.yml says why), and it drops to per-seat uids for every job.
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin grader \
    && mkdir -p /var/lib/grader && chown grader /var/lib/grader
USER grader
