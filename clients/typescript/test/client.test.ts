// The client against a real `loci serve`: every call, typed bodies and answers, errors carrying the
// envelope, cursor pages and the live event stream.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import {
  AuthenticationError,
  InvalidRequest,
  LociClient,
  NotFoundError,
  PermissionDeniedError,
  UnexpectedAnswer,
  ValidationError,
  type Memory,
} from "../src/index.js";
import { entity, FAST, KEY, NO_SERVER, READ_KEY, URL } from "./helpers.js";

const client = (): LociClient => new LociClient({ baseUrl: URL, apiKey: KEY, retry: FAST });

// Compile-time only: bodies take the API's snake_case keys, not camelCase ones.
export function typeChecks(loci: LociClient): void {
  // @ts-expect-error entityId is not a field of the API; entity_id is
  void loci.createMemory({ type: "note", text: "x", entityId: "ent:a" });
  // @ts-expect-error a memory's type is one of the API's
  void loci.createMemory({ type: "thought", text: "x" });
  // @ts-expect-error recall needs a query
  void loci.recall({ entity_id: "ent:a" });
}

describe("against a fake fetch", () => {
  const answering = (body: string, seen: string[] = [], type = "text/plain"): LociClient =>
    new LociClient({
      baseUrl: "http://loci.test",
      apiKey: "loci_x",
      retry: FAST,
      fetch: async (input) => {
        seen.push(new globalThis.URL(String(input)).pathname);
        return new Response(body, { status: 200, headers: { "X-Request-Id": "req_1", "Content-Type": type } });
      },
    });

  test("a memory id is one path segment; an id fetch would resolve as a folder is refused", async () => {
    const seen: string[] = [];
    const loci = answering(JSON.stringify({ deleted: true, memory_id: "x" }), seen);
    await loci.getMemory("x/../mem_1?a=1#b");
    await loci.updateMemory("../health", { archived: true });
    await loci.deleteMemory("%2E%2E");
    assert.deepEqual(seen, [
      "/v0/memories/x%2F..%2Fmem_1%3Fa%3D1%23b",
      "/v0/memories/..%2Fhealth",
      "/v0/memories/%252E%252E",
    ]);
    for (const id of ["", ".", ".."]) await assert.rejects(loci.deleteMemory(id), RangeError);
    assert.equal(seen.length, 3);
  });

  test("a success answer, or a streamed event, that is not JSON throws UnexpectedAnswer", async () => {
    const unexpected = (error: unknown): boolean => {
      assert.ok(error instanceof UnexpectedAnswer, String(error));
      assert.equal(error.status, 200);
      return true;
    };
    const page = answering("<html>a login page</html>");
    const fromPage = (e: unknown): boolean => unexpected(e) && (e as UnexpectedAnswer).requestId === "req_1";
    await assert.rejects(page.getMemory("mem_1"), fromPage);
    const stream = answering("id: c1\nevent: memory.created\ndata: <html>\n\n", [], "text/event-stream");
    await assert.rejects(stream.streamEvents().next(), unexpected);
    // a page instead of the stream: it ended at once, with no event and no error
    await assert.rejects(page.streamEvents({ max_events: 1 }).next(), (e: unknown) =>
      unexpected(e) && /not an event stream/.test(String(e)),
    );
  });

  test("a header value with a control character throws InvalidRequest before any request", async () => {
    const seen: string[] = [];
    const loci = answering("{}", seen);
    const refused = (name: string, bad: string) => (e: unknown) =>
      e instanceof InvalidRequest && e.message.startsWith(name) && !e.message.includes(bad);
    for (const bad of ["a\nb", "a\r\nX-Evil: 1", "a\u0000", "\t", "a\u007f", "a\u0085", "\ud800"]) {
      const note = { type: "note" as const, text: "x" };
      await assert.rejects(loci.createMemory(note, { agent: bad }), refused("X-Service-Agent", bad));
      const write = loci.deleteMemory("mem_1", { idempotencyKey: bad });
      await assert.rejects(write, refused("Idempotency-Key", bad));
      await assert.rejects(loci.streamEvents({ after: bad }).next(), refused("Last-Event-ID", bad));
      const keyed = (): LociClient => new LociClient({ baseUrl: "http://loci.test", apiKey: `loci_${bad}` });
      assert.throws(keyed, refused("the API key", bad));
    }
    assert.deepEqual(seen, []);
  });
});

test("a server URL that is no http(s) URL or path is an InvalidRequest when the client is made", async () => {
  for (const baseUrl of ["127.0.0.1:8080", "localhost:8080", "ftp://loci.test", "http://", "loci.test/api"]) {
    assert.throws(() => new LociClient({ baseUrl }), InvalidRequest, baseUrl);
  }
  const seen: string[] = [];
  const fetch = async (input: RequestInfo | globalThis.URL) => {
    seen.push(String(input));
    return new Response('{"status":"ok"}', { status: 200 });
  };
  for (const baseUrl of ["http://loci.test/", "https://loci.test:8443/api//", "/api/", "/"]) {
    await new LociClient({ baseUrl, fetch, retry: FAST }).health();
  }
  assert.deepEqual(seen, [
    "http://loci.test/v0/health",
    "https://loci.test:8443/api/v0/health",
    "/api/v0/health",
    "/v0/health",
  ]);
});

test("a write's key is a fresh UUID also without crypto.randomUUID (a page over plain http)", async () => {
  const keys: string[] = [];
  const loci = new LociClient({
    baseUrl: "http://loci.test",
    apiKey: "loci_x",
    retry: FAST,
    fetch: async (_input, init) => {
      keys.push(new Headers(init?.headers).get("Idempotency-Key") ?? "");
      return new Response('{"deleted":true,"memory_id":"mem_1"}', { status: 200 });
    },
  });
  // browsers expose crypto.randomUUID to secure contexts only (https, localhost); getRandomValues to all
  const saved = Object.getOwnPropertyDescriptor(crypto, "randomUUID");
  Object.defineProperty(crypto, "randomUUID", { value: undefined, configurable: true });
  try {
    await loci.deleteMemory("mem_1");
    await loci.deleteMemory("mem_1");
  } finally {
    if (saved) Object.defineProperty(crypto, "randomUUID", saved);
    else Reflect.deleteProperty(crypto, "randomUUID");
  }
  assert.equal(keys.length, 2);
  assert.notEqual(keys[0], keys[1]);
  const uuid4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  for (const key of keys) assert.match(key, uuid4);
});

test("a redirect is an UnexpectedAnswer, not followed: fetch would resend a write as a GET", async () => {
  // a front server that moved the API from /old/<status> to /api, where a GET of /v0/memories answers a page
  const seen: string[] = [];
  const front = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const old = /^\/old\/(\d+)(\/.*)$/.exec(req.url ?? "");
    if (old) res.writeHead(Number(old[1]), { Location: `/api${old[2]}` }).end();
    else res.writeHead(200, { "Content-Type": "application/json" }).end('{"items":[],"next_cursor":null}');
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  try {
    for (const status of [301, 302, 303, 307, 308]) {
      seen.length = 0;
      const loci = new LociClient({ baseUrl: `${origin}/old/${status}`, apiKey: "loci_x", retry: FAST });
      await assert.rejects(loci.createMemory({ type: "note", text: "x" }), (e: unknown) => {
        assert.ok(e instanceof UnexpectedAnswer, String(e));
        assert.equal(e.status, status);
        assert.match(e.message, /redirect.*\/api\/v0\/memories/);
        return true;
      });
      assert.deepEqual(seen, [`POST /old/${status}/v0/memories`]);
    }
  } finally {
    await new Promise<void>((resolve) => front.close(() => resolve()));
  }
});

describe("against a live server", { skip: NO_SERVER }, () => {
  test("health, and the URL and key from the environment", async () => {
    const loci = new LociClient({ retry: FAST }); // LOCI_URL, LOCI_API_KEY
    assert.equal(loci.baseUrl, URL.replace(/\/+$/, ""));
    assert.equal((await loci.health()).status, "ok");
    assert.ok(Array.isArray((await loci.listMemories({ page_size: 1 })).items));
  });

  test("memories: create, get, update, create several, delete, list and iterate", async () => {
    const loci = client();
    const ent = entity();
    const made = await loci.createMemory({
      type: "note",
      text: "Alice likes tea",
      entity_id: ent,
      tags: ["a"],
    });
    assert.match(made.memory_id, /^mem_/);
    assert.deepEqual(await loci.getMemory(made.memory_id), made);
    const changed = await loci.updateMemory(made.memory_id, { tags: ["b"], archived: true });
    assert.deepEqual([changed.tags, changed.archived], [["b"], true]);
    const batch = await loci.createMemories({
      items: [0, 1, 2, 3, 4].map((i) => ({ type: "event" as const, text: `e${i}`, entity_id: ent })),
    });
    assert.equal(batch.items.length, 5);
    assert.deepEqual(await loci.deleteMemory(made.memory_id), { deleted: true, memory_id: made.memory_id });
    const page = await loci.listMemories({ entity_id: ent, page_size: 2 });
    assert.equal(page.items.length, 2);
    assert.ok(page.next_cursor);
    const all: Memory[] = [];
    for await (const memory of loci.iterMemories({ entity_id: ent, page_size: 2, sort: "timestamp_asc" })) {
      all.push(memory);
    }
    assert.deepEqual(
      all.map((m) => m.text),
      ["e0", "e1", "e2", "e3", "e4"],
    );
  });

  test("assemble stores and supersedes; recall finds the current value", async () => {
    const loci = client();
    const ent = entity();
    await loci.assemble({ entity_id: ent, turn: "I live in Paris" });
    const moved = await loci.assemble({ entity_id: ent, turn: "I moved to Berlin" });
    assert.deepEqual(
      moved.extracted?.upserts.map((u) => u.action),
      ["UPSERTED", "SUPERSEDED"],
    );
    const asked = await loci.assemble({ entity_id: ent, turn: "Where do I live?" });
    assert.ok(
      asked.context.facts.some((line) => line.includes("Berlin")),
      JSON.stringify(asked.context),
    );
    const found = await loci.recall({ query: "Berlin", entity_id: ent });
    assert.ok(found.matches.length > 0);
    assert.match(found.matches[0]?.text ?? "", /Berlin/);
  });

  test("summarize and prune", async () => {
    const loci = client();
    const ent = entity();
    const made = await loci.createMemories({
      items: [
        { type: "fact", text: "Bob works at Acme", entity_id: ent },
        { type: "note", text: "Bob prefers green tea", entity_id: ent },
      ],
    });
    const summary = await loci.summarize({ entity_id: ent });
    assert.equal(summary.origin, "extractive");
    assert.match(summary.summary, /Acme|tea/);
    const stale = made.items[0]?.memory_id ?? "";
    await loci.updateMemory(stale, { archived: true });
    const dry = await loci.prune({ entity_id: ent, archived: true });
    assert.deepEqual([dry.dry_run, dry.memory_ids], [true, [stale]]);
    assert.equal((await loci.getMemory(stale)).memory_id, stale); // a dry run changes nothing
    const done = await loci.prune({ entity_id: ent, archived: true, action: "delete", dry_run: false });
    assert.deepEqual([done.dry_run, done.count], [false, 1]);
    const left = await loci.listMemories({ entity_id: ent });
    assert.deepEqual(
      left.items.map((m) => m.text),
      ["Bob prefers green tea"],
    );
  });

  test("summarize and prune as an agent", async () => {
    const loci = client();
    const ent = entity();
    await loci.assemble({ entity_id: ent, turn: "I live in Paris." }, { agent: "a1" });
    await loci.assemble({ entity_id: ent, turn: "I live in Rome." }, { agent: "a2" });
    const mine = await loci.summarize({ entity_id: ent }, { agent: "a1" });
    assert.match(mine.summary, /Paris/);
    assert.doesNotMatch(mine.summary, /Rome/);
    const dry = await loci.prune({ entity_id: ent, types: ["event"] }, { agent: "a2" });
    assert.equal(dry.count, 1); // a2's turn, not a1's
  });

  test("an agent and an Idempotency-Key beyond ASCII are sent as UTF-8 and round-trip", async () => {
    // fetch sent "café" as Latin-1 (the server answered 422, not UTF-8) and threw a TypeError on "🎉"
    const loci = client();
    const ent = entity();
    const body = { type: "note" as const, text: "from the café", entity_id: ent };
    const made = await loci.createMemory(body, { agent: "café", idempotencyKey: "clé-🎉" });
    assert.equal(made.agent_id, "café");
    assert.deepEqual(await loci.createMemory(body, { agent: "café", idempotencyKey: "clé-🎉" }), made);
    const mine = await loci.listMemories({ entity_id: ent }, { agent: "café" });
    assert.deepEqual(mine.items.map((m) => m.memory_id), [made.memory_id]);
    const other = await loci.createMemory(body, { agent: "エージェント", idempotencyKey: "🔑" });
    assert.equal(other.agent_id, "エージェント");
    const stranger = new LociClient({ baseUrl: URL, apiKey: "loci_clé", retry: FAST });
    await assert.rejects(stranger.listMemories(), AuthenticationError);
    await assert.rejects(loci.streamEvents({ after: "café", timeout: 5 }).next(), ValidationError);
  });

  test("errors are typed and carry the envelope", async () => {
    const loci = client();
    const missing = await loci.getMemory("mem_nope").catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError);
    assert.equal(missing.status, 404);
    assert.equal(missing.envelope.error, "not_found");
    assert.match(missing.requestId, /^req_/);
    const bad = await loci
      .createMemory({ type: "note", text: "x", tags: ["t".repeat(65)] })
      .catch((e: unknown) => e);
    assert.ok(bad instanceof ValidationError);
    assert.equal(bad.code, "validation_error");
    assert.equal(bad.details.field, "tags[0]");
    const reader = new LociClient({ baseUrl: URL, apiKey: READ_KEY, retry: FAST });
    await assert.rejects(reader.createMemory({ type: "note", text: "x" }), (e: unknown) => {
      return e instanceof PermissionDeniedError && /write/.test(e.message);
    });
    const stranger = new LociClient({ baseUrl: URL, apiKey: "loci_not_a_key", retry: FAST });
    await assert.rejects(stranger.listMemories(), AuthenticationError);
  });

  test("event pages, and the live stream resumed after a cursor", async () => {
    const loci = client();
    const ent = entity();
    for (const i of [0, 1, 2]) await loci.createMemory({ type: "note", text: `n${i}`, entity_id: ent });
    const first = await loci.events({ entity_id: ent, limit: 2 });
    assert.equal(first.items.length, 2);
    const pages = [];
    for await (const item of loci.iterEvents({ entity_id: ent, limit: 2 })) pages.push(item);
    assert.deepEqual(
      pages.map((e) => e.type),
      ["memory.created", "memory.created", "memory.created"],
    );
    const streamed = [];
    for await (const event of loci.streamEvents({ entity_id: ent, max_events: 3, timeout: 20 }))
      streamed.push(event);
    assert.deepEqual(
      streamed.map((e) => e.item.event_id),
      pages.map((e) => e.event_id),
    );
    assert.deepEqual(
      streamed.map((e) => e.type),
      ["memory.created", "memory.created", "memory.created"],
    );
    const resumed = [];
    const after = streamed[0]?.cursor;
    for await (const event of loci.streamEvents({ entity_id: ent, after, max_events: 2, timeout: 20 })) {
      resumed.push(event.item.event_id);
    }
    assert.deepEqual(
      resumed,
      pages.slice(1).map((e) => e.event_id),
    );
  });

  test("the live stream follows writes made after it opened, and leaving the loop closes it", async () => {
    const loci = client();
    const ent = entity();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of loci.streamEvents({ entity_id: ent, timeout: 30 })) {
        seen.push(event.item.memory_id ?? "");
        if (seen.length === 2) break;
      }
    })();
    const a = await loci.createMemory({ type: "note", text: "later 1", entity_id: ent });
    const b = await loci.createMemory({ type: "note", text: "later 2", entity_id: ent });
    await reading;
    assert.deepEqual(seen, [a.memory_id, b.memory_id]);
  });
});
