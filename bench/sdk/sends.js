// Sends per second of Microsoft's JS Service Bus SDK (@azure/service-bus, unmodified), for
// bench/servicebus-sdks.sh.
//
//   NODE_PATH=servicebus/tests/sdk/node_modules node sends.js CONN TOPIC CONCURRENCY SECONDS BODY_BYTES
//
// CONCURRENCY N runs N loops, each awaiting one send at a time, on one sender (the SDK's
// sender takes concurrent sends; N = 1 is sequential). Each message looks like hubload's:
// a message id, content type application/json, four application properties and a body of
// BODY_BYTES. Bounded by SECONDS. Prints one JSON line: warmup (sends before the clock
// starts), sends, errors, seconds, cpu_s (this
// process, user + system, over the send loop only).
//
// With SB_WEBSOCKET_ENDPOINT=https://host:port set, the client speaks AMQP over WebSockets
// (webSocketOptions with the `ws` package) to that address; NODE_EXTRA_CA_CERTS names the CA.

const { ServiceBusClient } = require("@azure/service-bus");
const { randomUUID } = require("crypto");

const PROPS = { tenant: "tenant-0001", sp: "sp-01", application: "app-01", channel: "user" };

function message(body) {
  return { body, messageId: randomUUID(), contentType: "application/json", applicationProperties: PROPS };
}

async function main(argv) {
  const [conn, topic] = [argv[2], argv[3]];
  const [n, seconds, size] = [Number(argv[4]), Number(argv[5]), Number(argv[6])];
  const body = "x".repeat(size);
  const options = { retryOptions: { maxRetries: 0, timeoutInMs: 20000 } };
  const ws = process.env.SB_WEBSOCKET_ENDPOINT;
  if (ws) {
    options.webSocketOptions = { webSocket: require("ws") };
    options.customEndpointAddress = ws;
  }
  const c = new ServiceBusClient(conn, options);
  const s = c.createSender(topic);
  await s.sendMessages(message(body)); // opens the link (and CBS) before the clock starts
  let sends = 0;
  let errors = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  async function worker() {
    while (performance.now() < end) {
      try {
        await s.sendMessages(message(body));
        sends++;
      } catch {
        errors++; // counted, as hubload counts its failures
      }
    }
  }
  await Promise.all(Array.from({ length: n }, worker));
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await s.close();
  await c.close();
  const cpuS = (cpu.user + cpu.system) / 1e6;
  process.stdout.write(JSON.stringify({ warmup: 1, sends, errors, seconds: +wall.toFixed(3), cpu_s: +cpuS.toFixed(3) }) + "\n");
}

main(process.argv).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(String(e) + "\n");
    process.exit(1);
  }
);
