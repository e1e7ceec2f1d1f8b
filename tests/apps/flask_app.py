"""The gunicorn target of the tests: ``yiemagent.examples.flask_durable`` with the kit's model and tools.

``gunicorn -w 3 tests.apps.flask_app:app`` (store and counter from the environment, see ``kit``).
"""

from tests.apps import kit
from yiemagent.examples.flask_durable import create_app

app = create_app(kit.store_from_env, kit.make_agent, answer_timeout_seconds=60.0)
