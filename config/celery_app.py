from __future__ import annotations

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("autograde")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_unusable_connections(task: object = None, **_: object) -> None:
    """What Django does around each request: close a connection that broke or outlived CONN_MAX_AGE.
    Celery's own fixup closes every connection around every task unless CELERY_DB_REUSE_MAX is set.
    Not for eager tasks: they run inside the caller's request or test transaction."""
    from django.db import close_old_connections

    if getattr(getattr(task, "request", None), "is_eager", False):
        return

    close_old_connections()
