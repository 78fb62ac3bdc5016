"""Drive Microsoft's Python ServiceBusAdministrationClient (azure-servicebus, unmodified) against
the emulator's administration API, for servicebus/tests/sdk_admin.rs and hub/tests/broker_admin.rs.

  admin.py scenario CONN          create, get, list and delete a topic, a subscription, a queue
  admin.py list     CONN TOPIC    the topics, and the subscriptions of TOPIC ([] if it is gone)
  admin.py create   CONN TOPIC    create TOPIC
  admin.py create_subscription CONN TOPIC NAME
  admin.py delete   CONN TOPIC    delete TOPIC

CONN is a connection string whose Endpoint names the administration port, with
UseDevelopmentEmulator=true. One JSON line on stdout; SDK exceptions are data (class name).

The SDK (7.15) builds the administration endpoint as https://<host:port> even with
UseDevelopmentEmulator=true: the flag only turns off TLS for AMQP. So this script hands it a
transport that sends the same requests over plain HTTP; everything else (the URLs, the SAS
header, the ATOM bodies and their parsing) is the SDK's own.
"""

import json
import sys

from azure.core.pipeline.transport import RequestsTransport
from azure.servicebus.management import ServiceBusAdministrationClient


class PlainHttp(RequestsTransport):
    def send(self, request, **kwargs):
        if request.url.startswith("https://"):
            request.url = "http://" + request.url[len("https://"):]
        return super().send(request, **kwargs)


def out(**fields):
    print(json.dumps(fields), flush=True)


def client(conn):
    return ServiceBusAdministrationClient.from_connection_string(
        conn, transport=PlainHttp(), retry_total=0
    )


def error_of(f):
    try:
        f()
        return None
    except Exception as e:  # the class name is the result
        return type(e).__name__


def scenario(conn):
    r = {}
    with client(conn) as c:
        r["create_topic"] = c.create_topic("events").name
        r["create_topic_again"] = error_of(lambda: c.create_topic("events"))
        s = c.create_subscription(
            "events", "audit", lock_duration="PT5S", max_delivery_count=3
        )
        r["create_subscription"] = [
            s.name,
            s.lock_duration.total_seconds(),
            s.max_delivery_count,
        ]
        q = c.create_queue("jobs", max_delivery_count=4)
        r["create_queue"] = [q.name, q.max_delivery_count]
        r["get_topic"] = c.get_topic("events").name
        g = c.get_subscription("events", "audit")
        r["get_subscription"] = [g.name, g.lock_duration.total_seconds(), g.max_delivery_count]
        r["topics"] = sorted(t.name for t in c.list_topics())
        r["queues"] = sorted(t.name for t in c.list_queues())
        r["subscriptions"] = sorted(t.name for t in c.list_subscriptions("events"))
        c.delete_subscription("events", "audit")
        r["subscriptions_after"] = sorted(t.name for t in c.list_subscriptions("events"))
        r["get_deleted_subscription"] = error_of(lambda: c.get_subscription("events", "audit"))
        c.delete_topic("events")
        c.delete_queue("jobs")
        r["get_deleted_topic"] = error_of(lambda: c.get_topic("events"))
        r["delete_deleted_topic"] = error_of(lambda: c.delete_topic("events"))
        r["topics_after"] = sorted(t.name for t in c.list_topics())
        r["queues_after"] = sorted(t.name for t in c.list_queues())
    bad = conn.replace("SharedAccessKey=", "SharedAccessKey=x")
    with client(bad) as c:
        r["wrong_key"] = error_of(lambda: list(c.list_topics()))
    out(error=None, **r)


def list_topic(conn, topic):
    with client(conn) as c:
        topics = sorted(t.name for t in c.list_topics())
        err = error_of(lambda: c.get_topic(topic))
        subs = [] if err else sorted(s.name for s in c.list_subscriptions(topic))
    out(error=None, topics=topics, subscriptions=subs, get_topic=err)


def create(conn, topic):
    with client(conn) as c:
        out(error=None, name=c.create_topic(topic).name)


def create_subscription(conn, topic, name):
    with client(conn) as c:
        out(error=None, name=c.create_subscription(topic, name).name)


def delete(conn, topic):
    with client(conn) as c:
        c.delete_topic(topic)
    out(error=None)


def main():
    action, conn = sys.argv[1], sys.argv[2]
    try:
        if action == "scenario":
            scenario(conn)
        elif action == "list":
            list_topic(conn, sys.argv[3])
        elif action == "create":
            create(conn, sys.argv[3])
        elif action == "create_subscription":
            create_subscription(conn, sys.argv[3], sys.argv[4])
        elif action == "delete":
            delete(conn, sys.argv[3])
        else:
            out(error="unknown action " + action)
    except Exception as e:
        out(error=type(e).__name__, detail=str(e)[:500])


if __name__ == "__main__":
    main()
