"""Tests of conversations served by other processes: gunicorn, plain workers, DBOS, Celery, crashes."""
