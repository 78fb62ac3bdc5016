"""flask-websub's hub (PyPI `flask-websub` 0.4.x) in one local process, for tests/flask_websub.rs.

Usage: python3 flask_websub_hub.py PORT DB_PATH

Binds 127.0.0.1:PORT; the hub endpoint is POST /hub. Celery runs eagerly (task_always_eager,
in-memory broker), so every task the hub schedules runs inside the request that caused it:
a publish answers 202 only after the hub fetched the topic URL and POSTed the content to
every subscriber; a subscribe answers 202 only after the hub verified the subscriber's intent.
Content is signed with `X-Hub-Signature: sha256=<hex HMAC of the body>`.
"""

import logging
import sys

from celery import Celery
from flask import Flask
from flask_websub.hub import Hub, SQLite3HubStorage


def main():
    port = int(sys.argv[1])
    db = sys.argv[2]
    app = Flask(__name__)
    app.config["PUBLISH_SUPPORTED"] = True
    celery = Celery("hub", broker="memory://", backend="cache+memory://")
    celery.conf.task_always_eager = True
    # A failed task (an unreachable callback) is an error the test should see, not a retry
    # an hour later.
    celery.conf.task_eager_propagates = True
    hub = Hub(
        SQLite3HubStorage(db),
        celery,
        SIGNATURE_ALGORITHM="sha256",
        MAX_ATTEMPTS=1,
        REQUEST_TIMEOUT=10,
    )
    app.register_blueprint(hub.build_blueprint(url_prefix="/hub"))
    logging.basicConfig(level=logging.WARNING)
    app.run(host="127.0.0.1", port=port, threaded=True, use_reloader=False)


if __name__ == "__main__":
    main()
