// The live stream's resumption, against a fake event server that drops the connection mid-stream or ends
// the answer: the client reconnects with the last cursor as Last-Event-ID and yields every event once,
// unless the stream reached the max_events or timeout it asked for.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { AuthenticationError, ConnectionFailed, LociClient, UnexpectedAnswer } from "../src/index.js";
import { FAST } from "./helpers.js";

function frame(n: number): string {
  const item = {
    event_id: `evt_${n}`,
    type: "memory.created",
    at: "2026-01-01T00:00:00Z",
    memory_id: `mem_${n}`,
    entity_id: null,
    data: {},
  };
  return `id: c${n}\nevent: memory.created\ndata: ${JSON.stringify(item)}\n\n`;
}

interface EventServer {
  url: string;
  /** The Last-Event-ID of each connection. */
  lastIds: (string | null)[];
  /** The query of each connection. */
  queries: URLSearchParams[];
  /** Resolves when a client closes a connection the server left open ("open"). */
  clientClosed: Promise<void>;
  close: () => Promise<void>;
}

/** Answers each connection with the events listed for it, then ends the answer; after "drop" it cuts the
 * connection instead, after "open" it leaves it open; "401" answers that error (a revoked key). Each
 * answer starts after `delayMs`. */
type Step = number | "drop" | "open" | "401";

async function eventServer(script: Step[][], delayMs = 0): Promise<EventServer> {
  const lastIds: (string | null)[] = [];
  const queries: URLSearchParams[] = [];
  const sockets = new Set<net.Socket>();
  let closed = (): void => {};
  const clientClosed = new Promise<void>((resolve) => (closed = resolve));
  const server = http.createServer(async (req, res) => {
    lastIds.push((req.headers["last-event-id"] as string | undefined) ?? null);
    queries.push(new URL(req.url ?? "/", "http://x").searchParams);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (script[0]?.includes("401")) {
      script.shift();
      const envelope = { error: "unauthorized", message: "the API key was revoked", request_id: "req_1" };
      res.writeHead(401, { "Content-Type": "application/json" }).end(JSON.stringify(envelope));
      return;
    }
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.write("retry: 1000\n: connected\n\n");
    const steps = script.shift() ?? [];
    const frames = steps.flatMap((s) => (typeof s === "number" ? [frame(s)] : [])).join("");
    if (steps.includes("drop"))
      res.write(frames, () => req.socket.destroy()); // sent, then cut
    else if (steps.includes("open")) {
      res.write(frames);
      res.on("close", closed);
    } else res.end(frames);
  });
  server.on("connection", (s) => sockets.add(s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    lastIds,
    queries,
    clientClosed,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test("a dropped stream resumes after the last event seen", async () => {
  const server = await eventServer([[1, 2, "drop"], [3]]);
  try {
    const loci = new LociClient({ baseUrl: server.url, apiKey: "loci_x", retry: FAST });
    const got = [];
    for await (const event of loci.streamEvents({ max_events: 3 })) got.push(event.item.event_id);
    assert.deepEqual(got, ["evt_1", "evt_2", "evt_3"]);
    assert.deepEqual(server.lastIds, [null, "c2"]);
  } finally {
    await server.close();
  }
});

test("a stream that keeps dropping without an event is a ConnectionFailed", async () => {
  const server = await eventServer([["drop"], ["drop"], ["drop"], ["drop"], ["drop"]]);
  try {
    const loci = new LociClient({ baseUrl: server.url, apiKey: "loci_x", retry: FAST });
    await assert.rejects(async () => {
      for await (const _ of loci.streamEvents({ after: "c9" })) assert.fail("no event was sent");
    }, ConnectionFailed);
    assert.deepEqual(server.lastIds, ["c9", "c9", "c9", "c9"]);
  } finally {
    await server.close();
  }
});

test("a stream the server ends is resumed; a revoked key's resume throws its 401", async () => {
  // a server told to stop ends its streams, and so does one whose key was revoked
  const server = await eventServer([[1, 2], [3], ["401"]]);
  try {
    const loci = new LociClient({ baseUrl: server.url, apiKey: "loci_x", retry: FAST });
    const got: string[] = [];
    await assert.rejects(async () => {
      for await (const event of loci.streamEvents()) got.push(event.item.event_id);
    }, AuthenticationError);
    assert.deepEqual(got, ["evt_1", "evt_2", "evt_3"]);
    assert.deepEqual(server.lastIds, [null, "c2", "c3"]);
  } finally {
    await server.close();
  }
});

test("a resumed stream asks for what is left of max_events and timeout", async () => {
  const server = await eventServer([[1], [2, 3]]);
  try {
    const loci = new LociClient({ baseUrl: server.url, apiKey: "loci_x", retry: FAST });
    const got = [];
    for await (const event of loci.streamEvents({ max_events: 3, timeout: 30 })) {
      got.push(event.item.event_id);
    }
    assert.deepEqual(got, ["evt_1", "evt_2", "evt_3"]);
    const [first, second] = server.queries;
    assert.deepEqual([first?.get("max_events"), first?.get("timeout")], ["3", "30"]);
    const left = Number(second?.get("timeout"));
    assert.ok(second?.get("max_events") === "2" && left > 0 && left < 30, String(second));
    assert.deepEqual(server.lastIds, [null, "c1"]);
  } finally {
    await server.close();
  }
});

test("a stream at its max_events or its timeout is over", async () => {
  const server = await eventServer([[1, 2], [3]]);
  const late = await eventServer([[1], [2]], 200); // it ends the stream once the timeout has passed
  try {
    const loci = new LociClient({ baseUrl: server.url, apiKey: "loci_x", retry: FAST });
    const got = [];
    for await (const event of loci.streamEvents({ max_events: 2 })) got.push(event.item.event_id);
    assert.deepEqual([got, server.lastIds.length], [["evt_1", "evt_2"], 1]);
    const slow = new LociClient({ baseUrl: late.url, apiKey: "loci_x", retry: FAST });
    const timed = [];
    for await (const event of slow.streamEvents({ timeout: 0.1 })) timed.push(event.item.event_id);
    assert.deepEqual([timed, late.lastIds.length], [["evt_1"], 1]);
  } finally {
    await server.close();
    await late.close();
  }
});

test("a stream the server keeps ending without an event is a ConnectionFailed", async () => {
  const server = await eventServer([]);
  try {
    const loci = new LociClient({ baseUrl: server.url, apiKey: "loci_x", retry: FAST });
    await assert.rejects(async () => {
      for await (const _ of loci.streamEvents({ after: "c9" })) assert.fail("no event was sent");
    }, (e: unknown) => e instanceof ConnectionFailed && /ended it before max_events/.test(e.message));
    assert.deepEqual(server.lastIds, ["c9", "c9", "c9", "c9"]);
  } finally {
    await server.close();
  }
});

test("leaving the loop closes the connection", { timeout: 30_000 }, async () => {
  const server = await eventServer([[1, 2, "open"]]);
  try {
    const loci = new LociClient({ baseUrl: server.url, apiKey: "loci_x", retry: FAST });
    for await (const event of loci.streamEvents()) {
      assert.equal(event.item.event_id, "evt_1");
      break;
    }
    await server.clientClosed; // the test times out if the connection stays open
  } finally {
    await server.close();
  }
});

test("a stream whose server never answers times out and is resumed", { timeout: 30_000 }, async () => {
  // the wait for the headers was unbounded: a server that accepts and never answers hung the client
  const sockets = new Set<net.Socket>();
  // an attempt is a connection that sent its request: one its timer cut while connecting sends none
  const asked = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("data", () => asked.add(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    const loci = new LociClient({ baseUrl, apiKey: "loci_x", timeoutMs: 200, retry: FAST });
    const hung = delay(10_000, "still waiting", { ref: false });
    const outcome = await Promise.race([loci.streamEvents().next().catch((e: unknown) => e), hung]);
    const timedOut = outcome instanceof ConnectionFailed && /no answer within 200 ms/.test(outcome.message);
    assert.ok(timedOut, String(outcome));
    assert.equal(asked.size, FAST.maxRetries + 1);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test("a stream's body has no read timeout once its headers came", async () => {
  let connections = 0;
  const server = http.createServer((_req, res) => {
    connections += 1;
    res.writeHead(200, { "Content-Type": "text/event-stream" }).write(": connected\n\n");
    setTimeout(() => res.write(frame(1)), 1000); // five times the client's timeout: events may be far apart
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    const loci = new LociClient({ baseUrl, apiKey: "loci_x", timeoutMs: 200, retry: FAST });
    const events = loci.streamEvents();
    const first = await events.next();
    await events.return();
    assert.equal(first.value?.item.event_id, "evt_1");
    assert.equal(connections, 1);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test("a redirected stream is an UnexpectedAnswer, not followed: another origin would drop the key", async () => {
  const seen: string[] = [];
  const front = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url?.split("?")[0]}`);
    res.writeHead(302, { Location: "http://elsewhere.test/v0/observability/events" }).end();
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const address = front.address() as net.AddressInfo;
  try {
    const loci = new LociClient({ baseUrl: `http://127.0.0.1:${address.port}`, apiKey: "loci_x", retry: FAST });
    await assert.rejects(
      (async () => {
        for await (const _ of loci.streamEvents({ max_events: 1 })) break;
      })(),
      (e: unknown) => {
        assert.ok(e instanceof UnexpectedAnswer, String(e));
        assert.equal(e.status, 302);
        assert.match(e.message, /redirects to http:\/\/elsewhere\.test/);
        return true;
      },
    );
    assert.deepEqual(seen, ["GET /v0/observability/events"]);
  } finally {
    await new Promise<void>((resolve) => front.close(() => resolve()));
  }
});
