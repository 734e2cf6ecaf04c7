# One image for web, worker, beat and sandbox; the command differs per service.
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends graphviz libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.lock .
RUN pip install --no-cache-dir -r requirements.lock
COPY . .
ENV DJANGO_SETTINGS_MODULE=config.settings DEBUG=0
RUN SECRET_KEY=build python manage.py collectstatic --noinput
