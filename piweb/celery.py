"""The Celery app: compactions, branch summaries and agent runs run here."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")

app = Celery("piweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
