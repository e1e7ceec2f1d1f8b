"""Apps the durable-conversation tests run in other processes (gunicorn, workers); see ``kit``."""
