"""Sends per second of Microsoft's Python Service Bus SDK (azure-servicebus, unmodified), for
bench/servicebus-sdks.sh.

  sends.py CONN TOPIC CONCURRENCY SECONDS BODY_BYTES

CONCURRENCY 1 is the synchronous client sending one message at a time; N > 1 is the asyncio
client with N tasks, each its own sender link on the one connection (a sender is not shared
between tasks). Each message looks like hubload's: a message id, content type
application/json, four application properties and a body of BODY_BYTES. Bounded by SECONDS.
Prints one JSON line: warmup (the sends made before the clock starts, one per link), sends,
errors, seconds, cpu_s (this process, user + system, over the
send loop only, so interpreter start-up and the CBS handshake are not charged).

With SB_WEBSOCKET_ENDPOINT=sb://host:port set, the client speaks AMQP over WebSockets
(TransportType.AmqpOverWebsocket) to that address, trusting the CA file SB_CA_FILE.
"""

import asyncio
import json
import sys
import time
import os
import uuid

from azure.servicebus import ServiceBusClient, ServiceBusMessage, TransportType
from azure.servicebus.aio import ServiceBusClient as AsyncClient

PROPS = {"tenant": "tenant-0001", "sp": "sp-01", "application": "app-01", "channel": "user"}


def transport():
    """The client's keyword arguments: none for plain AMQP, WebSockets when asked."""
    ws = os.environ.get("SB_WEBSOCKET_ENDPOINT")
    if not ws:
        return {}
    return dict(
        transport_type=TransportType.AmqpOverWebsocket,
        custom_endpoint_address=ws,
        connection_verify=os.environ["SB_CA_FILE"],
    )


def message(body):
    return ServiceBusMessage(
        body, message_id=str(uuid.uuid4()), content_type="application/json", application_properties=PROPS
    )


def sequential(conn, topic, seconds, body):
    sends = errors = 0
    with ServiceBusClient.from_connection_string(conn, retry_total=0, **transport()) as c, c.get_topic_sender(topic) as s:
        s.send_messages(message(body))  # opens the link (and CBS) before the clock starts
        cpu0, t0 = time.process_time(), time.monotonic()
        end = t0 + seconds
        while time.monotonic() < end:
            try:
                s.send_messages(message(body))
                sends += 1
            except Exception:  # counted, as hubload counts its failures
                errors += 1
        wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
    return 1, sends, errors, wall, cpu


async def concurrent(conn, topic, n, seconds, body):
    counts = {"sends": 0, "errors": 0}
    async with AsyncClient.from_connection_string(conn, retry_total=0, **transport()) as c:
        senders = [c.get_topic_sender(topic) for _ in range(n)]
        for s in senders:
            await s.send_messages(message(body))  # attach every link before the clock starts
        cpu0, t0 = time.process_time(), time.monotonic()
        end = t0 + seconds

        async def worker(s):
            while time.monotonic() < end:
                try:
                    await s.send_messages(message(body))
                    counts["sends"] += 1
                except Exception:
                    counts["errors"] += 1

        await asyncio.gather(*(worker(s) for s in senders))
        wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
        for s in senders:
            await s.close()
    return n, counts["sends"], counts["errors"], wall, cpu


def main(argv):
    conn, topic, n, seconds, size = argv[1], argv[2], int(argv[3]), float(argv[4]), int(argv[5])
    body = "x" * size
    if n == 1:
        warmup, sends, errors, wall, cpu = sequential(conn, topic, seconds, body)
    else:
        warmup, sends, errors, wall, cpu = asyncio.run(concurrent(conn, topic, n, seconds, body))
    print(json.dumps({"warmup": warmup, "sends": sends, "errors": errors, "seconds": round(wall, 3), "cpu_s": round(cpu, 3)}))


if __name__ == "__main__":
    main(sys.argv)
