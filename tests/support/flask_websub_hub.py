"""flask-websub's hub (PyPI `flask-websub` 0.4.x) in one local process, for tests/flask_websub.rs.

Usage: python3 flask_websub_hub.py PORT DB_PATH [DELIVERY_LOG]

Binds 127.0.0.1:PORT; the hub endpoint is POST /hub. Celery runs eagerly (task_always_eager,
in-memory broker), so every task the hub schedules runs inside the request that caused it:
a publish answers 202 only after the hub fetched the topic URL and POSTed the content to
every subscriber; a subscribe answers 202 only after the hub verified the subscriber's intent.
Content is signed with `X-Hub-Signature: sha256=<hex HMAC of the body>`.

With DELIVERY_LOG, the hub's own record of every content delivery it made: one JSON line per
POST to a callback, written after the answer, with the callback URL, the `Link` and
`X-Hub-Signature` headers it sent, the answer's status (or the error) and the body as text. This is flask-websub's side of
the reconciliation in tests/flask_websub_fleet.rs; it wraps the library's one HTTP helper and
changes nothing it does.
"""

import json
import logging
import sys
import threading

from celery import Celery
from flask import Flask
from flask_websub.hub import Hub, SQLite3HubStorage
from flask_websub.hub import tasks


def log_deliveries(path):
    """Record every POST the hub's tasks make (content distribution, WebSub section 7)."""
    request_url = tasks.request_url
    lock = threading.Lock()
    out = open(path, "a", buffering=1, encoding="utf-8")

    def logged(config, method, url, **kwargs):
        if method != "POST":
            return request_url(config, method, url, **kwargs)
        headers = {k.lower(): v for k, v in (kwargs.get("headers") or {}).items()}
        line = {
            "callback": url,
            "link": headers.get("link"),
            "signature": headers.get("x-hub-signature"),
            "body": (kwargs.get("data") or b"").decode("utf-8", "replace"),
        }
        try:
            resp = request_url(config, method, url, **kwargs)
        except Exception as e:  # logged, then raised as the library expects
            line["error"] = type(e).__name__
            with lock:
                out.write(json.dumps(line) + "\n")
            raise
        line["status"] = resp.status_code
        with lock:
            out.write(json.dumps(line) + "\n")
        return resp

    tasks.request_url = logged


def main():
    port = int(sys.argv[1])
    db = sys.argv[2]
    if len(sys.argv) > 3:
        log_deliveries(sys.argv[3])
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
