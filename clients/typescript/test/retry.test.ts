// Retries: a dropped answer is retried with the same Idempotency-Key and stored once; 429 and 503 are
// retried; a server that never answers is a ConnectionFailed; Retry-After sets the wait.
import assert from "node:assert/strict";
import net from "node:net";
import { describe, test } from "node:test";
import { ConnectionFailed, DEFAULT_RETRY, LociClient, RateLimitError, retryDelay } from "../src/index.js";
import { FaultyProxy } from "./faulty-proxy.js";
import { entity, FAST, KEY, NO_SERVER, portOf, URL } from "./helpers.js";

describe("through a faulty proxy", { skip: NO_SERVER }, () => {
  test("a write whose answer was dropped is retried with the same key and stored once", async () => {
    const proxy = await FaultyProxy.start(portOf(URL), ["drop"]);
    const ent = entity();
    try {
      const loci = new LociClient({ baseUrl: proxy.url, apiKey: KEY, retry: FAST });
      const made = await loci.createMemory({ type: "note", text: "written once", entity_id: ent });
      assert.equal(proxy.requests.length, 2); // the first answer was lost; the retry carried the same key
      assert.equal(proxy.idempotencyKeys().size, 1);
      const direct = new LociClient({ baseUrl: URL, apiKey: KEY });
      const stored = [];
      for await (const m of direct.iterMemories({ entity_id: ent })) stored.push(m.memory_id);
      assert.deepEqual(stored, [made.memory_id]);
    } finally {
      await proxy.close();
    }
  });

  test("two writes get two keys; a chosen key is sent as given", async () => {
    const proxy = await FaultyProxy.start(portOf(URL), []);
    try {
      const loci = new LociClient({ baseUrl: proxy.url, apiKey: KEY, retry: FAST });
      const ent = entity();
      await loci.createMemory({ type: "note", text: "one", entity_id: ent });
      await loci.createMemory({ type: "note", text: "two", entity_id: ent });
      assert.equal(proxy.idempotencyKeys().size, 2);
      const key = `mine-${ent}`;
      const first = await loci.createMemory(
        { type: "note", text: "three", entity_id: ent },
        { idempotencyKey: key },
      );
      const again = await loci.createMemory(
        { type: "note", text: "three", entity_id: ent },
        { idempotencyKey: key },
      );
      assert.equal(again.memory_id, first.memory_id); // the server replayed the first answer
      assert.ok(proxy.idempotencyKeys().has(`idempotency-key: ${key}`.toLowerCase()));
    } finally {
      await proxy.close();
    }
  });

  test("429 and 503 are retried", async () => {
    const proxy = await FaultyProxy.start(portOf(URL), ["429", "503"]);
    try {
      const loci = new LociClient({ baseUrl: proxy.url, apiKey: KEY, retry: FAST });
      assert.equal((await loci.health()).status, "ok");
      assert.equal(proxy.requests.length, 3);
    } finally {
      await proxy.close();
    }
  });

  test("429 after the last retry is a RateLimitError", async () => {
    const proxy = await FaultyProxy.start(portOf(URL), ["429", "429"]);
    try {
      const loci = new LociClient({ baseUrl: proxy.url, apiKey: KEY, retry: { ...FAST, maxRetries: 1 } });
      await assert.rejects(loci.health(), RateLimitError);
      assert.equal(proxy.requests.length, 2);
    } finally {
      await proxy.close();
    }
  });
});

test("a server that refuses connections is a ConnectionFailed after the retries", async () => {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const loci = new LociClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "loci_x", retry: FAST });
  await assert.rejects(loci.health(), ConnectionFailed);
});

test("Retry-After sets the wait (capped at a minute); without it, backoff doubles with jitter", () => {
  const policy = { maxRetries: 3, backoffMs: 1000, maxBackoffMs: 8000 };
  assert.equal(retryDelay(policy, 0, "2"), 2000);
  assert.equal(retryDelay(policy, 0, "0"), 0);
  assert.equal(retryDelay(policy, 0, "3600"), 60_000);
  // the HTTP-date form: the time until then (the past: no wait)
  const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
  const wait = retryDelay(policy, 0, inTenSeconds);
  assert.ok(wait > 8_000 && wait <= 10_000, `${inTenSeconds}: ${wait}`);
  assert.equal(retryDelay(policy, 0, "Wed, 21 Oct 2015 07:28:00 GMT"), 0);
  for (const [attempt, base] of [
    [0, 1000],
    [2, 4000],
    [5, 8000],
  ] as const) {
    const wait = retryDelay(policy, attempt, "soon");
    assert.ok(wait >= base / 2 && wait <= base, `${attempt}: ${wait}`);
  }
});

test("a retry field given as undefined keeps its default; a count or wait out of range throws", async () => {
  let attempts = 0;
  const failing: typeof fetch = async () => {
    attempts += 1;
    // an answer that is final: a client still retrying past its policy stops here
    if (attempts > 10) return new Response("retried past the policy", { status: 400 });
    throw new TypeError("fetch failed");
  };
  const options = (retry: Record<string, number | undefined>) => ({
    baseUrl: "http://loci.test",
    apiKey: "loci_x",
    retry: { backoffMs: 1, maxBackoffMs: 1, ...retry },
    fetch: failing,
  });
  // as `{ maxRetries: opts.retries }` passes it through when the caller set none
  const loci = new LociClient(options({ maxRetries: undefined }));
  await assert.rejects(loci.health(), ConnectionFailed);
  assert.equal(attempts, 1 + DEFAULT_RETRY.maxRetries);
  assert.equal(loci.retry.maxRetries, DEFAULT_RETRY.maxRetries);
  const bad = [{ maxRetries: Number.NaN }, { maxRetries: -1 }, { maxRetries: 1.5 }, { backoffMs: -5 }];
  for (const retry of bad) {
    assert.throws(() => new LociClient(options(retry)), RangeError, JSON.stringify(retry));
  }
});
