// Drive Microsoft's JS Service Bus SDK (@azure/service-bus, unmodified) for the emulator tests.
//
// One action per run; the result is one JSON line on stdout, so the Rust tests compare it with
// the emulator's own counts. SDK errors are data: their name and code go in "error"/"code".
//
//   node sb.js send    CONN ENTITY SINGLES BATCHES LISTS PER
//   node sb.js receive CONN ENTITY SUBSCRIPTION MODE SETTLE MAX WAIT_S
//   node sb.js peek    CONN ENTITY SUBSCRIPTION MAX
//   node sb.js renew   CONN ENTITY SUBSCRIPTION
//
// SUBSCRIPTION is "-" for a queue; MODE is peekLock or receiveAndDelete; SETTLE is complete,
// abandon, deadLetter, defer or none.
//
// With SB_WEBSOCKET_ENDPOINT=https://host:port set, the client speaks AMQP over WebSockets
// (webSocketOptions with the `ws` package) to that address; NODE_EXTRA_CA_CERTS names the CA.

const { ServiceBusClient } = require("@azure/service-bus");

function out(fields) {
  process.stdout.write(JSON.stringify(fields) + "\n");
}

function errorFields(e) {
  return { error: e.name || "Error", code: e.code || null };
}

function client(conn) {
  // maxRetries 0: a throttled or failed call surfaces at once instead of being retried.
  const options = { retryOptions: { maxRetries: 0, timeoutInMs: 20000 } };
  const ws = process.env.SB_WEBSOCKET_ENDPOINT;
  if (ws) {
    options.webSocketOptions = { webSocket: require("ws") };
    options.customEndpointAddress = ws;
  }
  return new ServiceBusClient(conn, options);
}

async function send(conn, entity, singles, batches, lists, per) {
  const c = client(conn);
  const s = c.createSender(entity);
  let sent = 0;
  let err = { error: null, code: null };
  try {
    for (let i = 0; i < singles; i++) {
      await s.sendMessages({ body: `single-${i}`, messageId: `s-${i}` });
      sent++;
    }
    for (let b = 0; b < batches; b++) {
      const batch = await s.createMessageBatch();
      for (let j = 0; j < per; j++) {
        if (!batch.tryAddMessage({ body: `batch-${b}-${j}`, messageId: `b-${b}-${j}` })) {
          throw new Error("batch full");
        }
      }
      await s.sendMessages(batch);
      sent += per;
    }
    for (let l = 0; l < lists; l++) {
      const list = [];
      for (let j = 0; j < per; j++) list.push({ body: `list-${l}-${j}`, messageId: `l-${l}-${j}` });
      await s.sendMessages(list);
      sent += per;
    }
  } catch (e) {
    err = errorFields(e);
  }
  await c.close();
  out({ sent, ...err });
}

function receiver(c, entity, sub, opts) {
  return sub === "-" ? c.createReceiver(entity, opts) : c.createReceiver(entity, sub, opts);
}

async function receive(conn, entity, sub, mode, settle, max, waitS) {
  const c = client(conn);
  const ids = [];
  let settled = 0;
  let err = { error: null, code: null };
  const deadline = Date.now() + waitS * 1000;
  try {
    const r = receiver(c, entity, sub, { receiveMode: mode });
    while (ids.length < max && Date.now() < deadline) {
      const left = Math.max(500, Math.min(2000, deadline - Date.now()));
      const got = await r.receiveMessages(Math.min(50, max - ids.length), { maxWaitTimeInMs: left });
      for (const m of got) {
        ids.push(m.messageId);
        if (settle === "none" || mode === "receiveAndDelete") continue;
        if (settle === "complete") await r.completeMessage(m);
        else if (settle === "abandon") await r.abandonMessage(m);
        else if (settle === "deadLetter") await r.deadLetterMessage(m, { deadLetterReason: "test" });
        else if (settle === "defer") await r.deferMessage(m);
        settled++;
      }
    }
    await r.close();
  } catch (e) {
    err = errorFields(e);
  }
  await c.close();
  out({ received: ids.length, distinct: new Set(ids).size, settled, ids, ...err });
}

async function peek(conn, entity, sub, max) {
  const c = client(conn);
  const ids = [];
  let err = { error: null, code: null };
  try {
    const r = receiver(c, entity, sub, {});
    for (const m of await r.peekMessages(max)) ids.push(m.messageId);
    await r.close();
  } catch (e) {
    err = errorFields(e);
  }
  await c.close();
  out({ peeked: ids.length, ids, ...err });
}

// Receive one message, renew its lock, report whether locked-until moved on, complete it.
async function renew(conn, entity, sub) {
  const c = client(conn);
  let before = null;
  let after = null;
  let err = { error: null, code: null };
  try {
    const r = receiver(c, entity, sub, { receiveMode: "peekLock" });
    const [m] = await r.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    if (m) {
      before = m.lockedUntilUtc.getTime() / 1000;
      await new Promise((res) => setTimeout(res, 1100));
      after = (await r.renewMessageLock(m)).getTime() / 1000;
      await r.completeMessage(m);
    }
    await r.close();
  } catch (e) {
    err = errorFields(e);
  }
  await c.close();
  out({ before, after, ...err });
}

async function main(argv) {
  const [action, conn] = [argv[2], argv[3]];
  if (action === "send") await send(conn, argv[4], ...argv.slice(5, 9).map(Number));
  else if (action === "receive")
    await receive(conn, argv[4], argv[5], argv[6], argv[7], Number(argv[8]), Number(argv[9]));
  else if (action === "peek") await peek(conn, argv[4], argv[5], Number(argv[6]));
  else if (action === "renew") await renew(conn, argv[4], argv[5]);
  else throw new Error(`unknown action ${action}`);
}

main(process.argv).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(String(e) + "\n");
    process.exit(1);
  }
);
