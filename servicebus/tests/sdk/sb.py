"""Drive Microsoft's Python Service Bus SDK (azure-servicebus, unmodified) for the emulator tests.

Each message sent carries the application property "kind" (single, batch or list), which
the subscription-rule tests filter on.

One action per run; the result is one JSON line on stdout, so the Rust tests compare it with
the emulator's own counts. SDK exceptions are data: their class name goes in "error".

  sb.py send    CONN ENTITY SINGLES BATCHES LISTS PER
  sb.py receive CONN ENTITY SUBSCRIPTION MODE SETTLE MAX WAIT_S
  sb.py peek    CONN ENTITY SUBSCRIPTION MAX
  sb.py renew   CONN ENTITY SUBSCRIPTION
  sb.py defer_cycle CONN ENTITY SUBSCRIPTION

ENTITY is a queue or topic; SUBSCRIPTION is "-" for a queue. MODE is peek_lock or
receive_and_delete; SETTLE is complete, abandon, dead_letter, defer or none.

With SB_WEBSOCKET_ENDPOINT=sb://host:port set, the client speaks AMQP over WebSockets
(TransportType.AmqpOverWebsocket) to that address, trusting the CA file SB_CA_FILE.
"""

import json
import os
import sys
import time

from azure.servicebus import (
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
    ServiceBusSubQueue,
    TransportType,
)


def out(**fields):
    print(json.dumps(fields), flush=True)


def error_name(e):
    return type(e).__name__


def client(conn):
    # retry_total=0: a throttled or failed call surfaces its error type at once instead of
    # being retried behind the test's back.
    kw = {}
    ws = os.environ.get("SB_WEBSOCKET_ENDPOINT")
    if ws:
        kw = dict(
            transport_type=TransportType.AmqpOverWebsocket,
            custom_endpoint_address=ws,
            connection_verify=os.environ["SB_CA_FILE"],
        )
    return ServiceBusClient.from_connection_string(conn, retry_total=0, **kw)


def send(conn, entity, singles, batches, lists, per):
    sent, error = 0, None
    try:
        # A topic sender and a queue sender differ only in name: both attach to the entity.
        with client(conn) as c, c.get_topic_sender(entity) as s:
            for i in range(singles):
                s.send_messages(ServiceBusMessage(f"single-{i}", message_id=f"s-{i}", application_properties={"kind": "single"}))
                sent += 1
            for b in range(batches):
                batch = s.create_message_batch()
                for j in range(per):
                    batch.add_message(ServiceBusMessage(f"batch-{b}-{j}", message_id=f"b-{b}-{j}", application_properties={"kind": "batch"}))
                s.send_messages(batch)
                sent += per
            for l in range(lists):
                s.send_messages(
                    [
                        ServiceBusMessage(f"list-{l}-{j}", message_id=f"l-{l}-{j}", application_properties={"kind": "list"})
                        for j in range(per)
                    ]
                )
                sent += per
    except Exception as e:  # the error type is the result under test
        error = error_name(e)
    out(sent=sent, error=error)


def receiver(c, entity, sub, mode, **kw):
    if sub == "-":
        return c.get_queue_receiver(entity, receive_mode=mode, **kw)
    return c.get_subscription_receiver(entity, sub, receive_mode=mode, **kw)


def receive(conn, entity, sub, mode, settle, max_count, wait_s):
    mode = {
        "peek_lock": ServiceBusReceiveMode.PEEK_LOCK,
        "receive_and_delete": ServiceBusReceiveMode.RECEIVE_AND_DELETE,
    }[mode]
    sub_queue = None
    if sub.endswith("/$deadletterqueue"):
        sub, sub_queue = sub[: -len("/$deadletterqueue")], ServiceBusSubQueue.DEAD_LETTER
    ids, settled, error = [], 0, None
    deadline = time.monotonic() + wait_s
    with client(conn) as c:
        try:
            with receiver(c, entity, sub, mode, sub_queue=sub_queue) as r:
                while len(ids) < max_count and time.monotonic() < deadline:
                    left = max(1, int(deadline - time.monotonic()))
                    got = r.receive_messages(max_message_count=min(50, max_count - len(ids)), max_wait_time=min(left, 2))
                    for m in got:
                        ids.append(m.message_id)
                        if settle == "complete":
                            r.complete_message(m)
                        elif settle == "abandon":
                            r.abandon_message(m)
                        elif settle == "dead_letter":
                            r.dead_letter_message(m, reason="test", error_description="sent there by the test")
                        elif settle == "defer":
                            r.defer_message(m)
                        else:
                            continue
                        settled += 1
        except Exception as e:
            error = error_name(e)
    out(received=len(ids), distinct=len(set(ids)), settled=settled, ids=ids, error=error)


def peek(conn, entity, sub, max_count):
    ids, error = [], None
    with client(conn) as c:
        try:
            with receiver(c, entity, sub, ServiceBusReceiveMode.PEEK_LOCK) as r:
                for m in r.peek_messages(max_message_count=max_count):
                    ids.append(m.message_id)
        except Exception as e:
            error = error_name(e)
    out(peeked=len(ids), ids=ids, error=error)


def renew(conn, entity, sub):
    """Receive one message, renew its lock, report whether locked-until moved on, complete it."""
    before = after = None
    error = None
    with client(conn) as c:
        try:
            with receiver(c, entity, sub, ServiceBusReceiveMode.PEEK_LOCK) as r:
                got = r.receive_messages(max_message_count=1, max_wait_time=5)
                if got:
                    m = got[0]
                    before = m.locked_until_utc.timestamp()
                    time.sleep(1.1)
                    after = r.renew_message_lock(m).timestamp()
                    r.complete_message(m)
        except Exception as e:
            error = error_name(e)
    out(before=before, after=after, error=error)


def defer_cycle(conn, entity, sub):
    """Receive one message and defer it, fetch it back by sequence number through $management,
    renew its lock there, then complete it there: the management node end to end."""
    error, renewed, completed = None, False, False
    with client(conn) as c:
        try:
            with receiver(c, entity, sub, ServiceBusReceiveMode.PEEK_LOCK) as r:
                got = r.receive_messages(max_message_count=1, max_wait_time=5)
                m = got[0]
                seq = m.sequence_number
                r.defer_message(m)
                [d] = r.receive_deferred_messages([seq])
                before = d.locked_until_utc
                time.sleep(1.1)
                after = r.renew_message_lock(d)
                renewed = after > before
                r.complete_message(d)
                completed = True
        except Exception as e:
            error = error_name(e)
    out(renewed=renewed, completed=completed, error=error)


def main(argv):
    action, conn = argv[1], argv[2]
    if action == "send":
        send(conn, argv[3], *map(int, argv[4:8]))
    elif action == "receive":
        receive(conn, argv[3], argv[4], argv[5], argv[6], int(argv[7]), float(argv[8]))
    elif action == "peek":
        peek(conn, argv[3], argv[4], int(argv[5]))
    elif action == "renew":
        renew(conn, argv[3], argv[4])
    elif action == "defer_cycle":
        defer_cycle(conn, argv[3], argv[4])
    else:
        sys.exit(f"unknown action {action}")


if __name__ == "__main__":
    main(sys.argv)
