// LociClient: every call of the Loci API over fetch, with retries that never write twice.
//
// - Bodies and answers are the API's own JSON (snake_case), typed from the server's OpenAPI document.
// - Every logical write (createMemory, createMemories, updateMemory, deleteMemory, assemble, prune)
//   sends one Idempotency-Key on all its attempts, so a retry after a lost answer writes nothing twice.
// - Header values (agent, Idempotency-Key, `after`, API key) are sent as UTF-8; one with a control
//   character throws InvalidRequest before any request.
// - Connection errors, 429 (after Retry-After) and 503 are retried with exponential backoff; any other
//   error answer throws the APIError of its status, carrying the error envelope; a success whose body
//   is not JSON, or a redirect (not followed), throws UnexpectedAnswer.
import { ConnectionFailed, InvalidRequest, UnexpectedAnswer, errorFor } from "./errors.js";
import { RETRY_STATUSES, type RetryPolicy, retryDelay, retryPolicy, sleep } from "./retry.js";
import { EVENT_STREAM, SseParser } from "./sse.js";
import type {
  AssembleRequest,
  AssembleResponse,
  Deleted,
  EventItem,
  EventList,
  EventStreamQuery,
  Health,
  ListEventsQuery,
  ListMemoriesQuery,
  Memory,
  MemoryBatch,
  MemoryCreate,
  MemoryItems,
  MemoryList,
  MemoryPatch,
  PruneRequest,
  PruneResult,
  RecallRequest,
  RecallResponse,
  StreamedEvent,
  SummarizeRequest,
  SummarizeResponse,
} from "./types.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";
const EVENTS_PATH = "/v0/observability/events";

export interface LociClientOptions {
  /** The server; defaults to $LOCI_URL, then http://127.0.0.1:8080. */
  baseUrl?: string;
  /** An API key (`loci_...`); defaults to $LOCI_API_KEY. */
  apiKey?: string;
  /** Time one attempt may take, in milliseconds (the live stream: until its headers come). */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Another fetch (a proxy agent, a test double); the global fetch by default. */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  /** Cancels the call, its retries and its waits. */
  signal?: AbortSignal;
}

export interface WriteOptions extends RequestOptions {
  /** The key all attempts of this write send; a fresh UUID by default. */
  idempotencyKey?: string;
}

export interface AgentOptions {
  /** Sent as X-Service-Agent: the calling agent's id (writes default their agent_id to it, reads are
   * scoped to it). */
  agent?: string;
}

type Method = "GET" | "POST" | "PATCH" | "DELETE";
type QueryValue = string | number | boolean | Date | readonly (string | number)[] | null | undefined;

interface Call {
  method: Method;
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  headers?: Record<string, string>;
  /** A logical write: sent with one Idempotency-Key for all its attempts. */
  writes?: boolean;
}

function fromEnv(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env?.[name] || undefined;
}

/** The server's URL without its trailing slashes: http(s)://host[:port][/path], or a path on the page's
 * own origin ("/api", in a browser). Anything else ("127.0.0.1:8080", "localhost:8080") throws
 * InvalidRequest here, where it would fail only at the first call, as a retried ConnectionFailed. */
function serverUrl(given: string): string {
  const url = given.replace(/\/+$/, "");
  if (given.startsWith("/") && !given.startsWith("//")) return url;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || !["http:", "https:"].includes(parsed.protocol) || !parsed.hostname) {
    const shown = JSON.stringify(given.slice(0, 64));
    throw new InvalidRequest(`the server URL must be http(s)://host[:port][/path] or a path ($LOCI_URL), got ${shown}`);
  }
  return url;
}

/** A redirect answer (an opaque one in a browser) as the UnexpectedAnswer it throws; null for any other. */
function notFollowed(method: string, path: string, answer: Response): UnexpectedAnswer | null {
  if (answer.type !== "opaqueredirect" && (answer.status < 300 || answer.status >= 400)) return null;
  const where = answer.headers.get("Location") ?? "a URL a browser does not show";
  const message = `${method} ${path}: ${answer.status} redirects to ${where} (not followed)`;
  return new UnexpectedAnswer(message, answer.status, answer.headers.get("X-Request-Id"));
}

function queryString(values: Record<string, QueryValue> | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values ?? {})) {
    if (value === null || value === undefined) continue;
    if (value instanceof Date) params.set(key, value.toISOString());
    else if (Array.isArray(value)) params.set(key, value.join(","));
    else params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** C0 and C1 controls and DEL: CR or LF would end the header, and none is text a header can carry. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** `value` as its UTF-8 bytes, one char each: fetch sends a header's chars as single bytes (and refuses
 * any above U+00FF), while the server reads X-Service-Agent and Idempotency-Key as UTF-8. A control
 * character or a lone surrogate throws InvalidRequest, naming no value (it may be the API key). */
function headerValue(name: string, value: string): string {
  const control = CONTROL.exec(value);
  if (control !== null) {
    const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0");
    const where = `U+${code} at index ${control.index}`;
    throw new InvalidRequest(`${name} cannot contain a control character (${where})`);
  }
  const lone = LONE_SURROGATE.exec(value);
  if (lone !== null) {
    throw new InvalidRequest(`${name} is not valid Unicode (a lone surrogate at index ${lone.index})`);
  }
  return Array.from(new TextEncoder().encode(value), (byte) => String.fromCharCode(byte)).join("");
}

function agentHeader(agent: string | undefined): Record<string, string> {
  return agent ? { "X-Service-Agent": agent } : {};
}

interface Scope {
  signal: AbortSignal;
  /** Closes the request (and its connection, mid-answer). */
  abort: () => void;
  /** Stops the timer: the answer's headers came, and a live stream's body may wait for events at will. */
  answered: () => void;
  /** Stops listening to the outer signal and the timer. */
  done: () => void;
}

/** A signal that aborts when `outer` does, and after `timeoutMs` when given. */
function linked(outer: AbortSignal | undefined, timeoutMs?: number): Scope {
  const controller = new AbortController();
  const abort = (): void => controller.abort(outer?.reason);
  if (outer?.aborted) abort();
  outer?.addEventListener("abort", abort, { once: true });
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  return {
    signal: controller.signal,
    abort: () => controller.abort(),
    answered: () => clearTimeout(timer),
    done: () => {
      clearTimeout(timer);
      outer?.removeEventListener("abort", abort);
    },
  };
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

export class LociClient {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: LociClientOptions = {}) {
    this.baseUrl = serverUrl(options.baseUrl ?? fromEnv("LOCI_URL") ?? DEFAULT_URL);
    const apiKey = options.apiKey ?? fromEnv("LOCI_API_KEY");
    this.apiKey = apiKey ? headerValue("the API key", apiKey) : undefined;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retry = retryPolicy(options.retry);
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  // --- memories ----------------------------------------------------------------------------------------
  health(options?: RequestOptions): Promise<Health> {
    return this.send({ method: "GET", path: "/v0/health" }, options);
  }

  createMemory(body: MemoryCreate, options?: WriteOptions & AgentOptions): Promise<Memory> {
    const headers = agentHeader(options?.agent);
    return this.send({ method: "POST", path: "/v0/memories", body, headers, writes: true }, options);
  }

  /** Several memories in one call (1..200): all are stored or none. */
  createMemories(body: MemoryBatch, options?: WriteOptions & AgentOptions): Promise<MemoryItems> {
    const headers = agentHeader(options?.agent);
    return this.send({ method: "POST", path: "/v0/memories", body, headers, writes: true }, options);
  }

  async getMemory(memoryId: string, options?: RequestOptions): Promise<Memory> {
    return this.send({ method: "GET", path: `/v0/memories/${segment(memoryId)}` }, options);
  }

  async updateMemory(memoryId: string, body: MemoryPatch, options?: WriteOptions): Promise<Memory> {
    const path = `/v0/memories/${segment(memoryId)}`;
    return this.send({ method: "PATCH", path, body, writes: true }, options);
  }

  async deleteMemory(memoryId: string, options?: WriteOptions): Promise<Deleted> {
    const path = `/v0/memories/${segment(memoryId)}`;
    return this.send({ method: "DELETE", path, writes: true }, options);
  }

  /** One page of memories; pass its `next_cursor` as `cursor` for the next. */
  listMemories(query: ListMemoriesQuery = {}, options?: RequestOptions & AgentOptions): Promise<MemoryList> {
    const headers = agentHeader(options?.agent);
    return this.send({ method: "GET", path: "/v0/memories", query, headers }, options);
  }

  /** Every memory matching the filters, page by page (cursor paging: no repeats, no gaps). */
  async *iterMemories(
    query: Omit<ListMemoriesQuery, "cursor"> = {},
    options?: RequestOptions & AgentOptions,
  ): AsyncGenerator<Memory, void, undefined> {
    let cursor: string | null | undefined;
    do {
      const page = await this.listMemories({ page_size: 200, ...query, cursor }, options);
      yield* page.items;
      cursor = page.next_cursor;
    } while (cursor);
  }

  // --- context -----------------------------------------------------------------------------------------
  /** The context for one agent turn; by default it also stores the turn and the facts it states. */
  assemble(body: AssembleRequest, options?: WriteOptions & AgentOptions): Promise<AssembleResponse> {
    const headers = agentHeader(options?.agent);
    return this.send({ method: "POST", path: "/v0/context/assemble", body, headers, writes: true }, options);
  }

  recall(body: RecallRequest, options?: RequestOptions & AgentOptions): Promise<RecallResponse> {
    const headers = agentHeader(options?.agent);
    return this.send({ method: "POST", path: "/v0/recall", body, headers }, options);
  }

  summarize(body: SummarizeRequest, options?: RequestOptions & AgentOptions): Promise<SummarizeResponse> {
    const headers = agentHeader(options?.agent);
    return this.send({ method: "POST", path: "/v0/summarize", body, headers }, options);
  }

  /** Deletes or archives what the rules select; a dry run unless `dry_run: false`. */
  prune(body: PruneRequest, options?: WriteOptions & AgentOptions): Promise<PruneResult> {
    const headers = agentHeader(options?.agent);
    return this.send({ method: "POST", path: "/v0/prune", body, headers, writes: true }, options);
  }

  // --- events ------------------------------------------------------------------------------------------
  /** One page of the org's event log; pass its `next_cursor` as `cursor` for the next. */
  events(query: ListEventsQuery = {}, options?: RequestOptions): Promise<EventList> {
    return this.send({ method: "GET", path: EVENTS_PATH, query }, options);
  }

  /** The log from `cursor` (or the start) to its current end, page by page. */
  async *iterEvents(
    query: ListEventsQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<EventItem, void, undefined> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.events({ limit: 500, ...query, cursor }, options);
      yield* page.items;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** The live event stream (server-sent events), until `max_events` events or `timeout` seconds (both
   * optional; the server ends it then), until the loop is left (which closes it) or the signal aborts. A
   * dropped connection, no answer's headers within `timeoutMs`, or the server ending the stream before then
   * (it is stopping; a revoked key then throws its 401 on the resume), is resumed after the last event seen
   * (Last-Event-ID) with what is left of `max_events` and `timeout`, after the retry policy's wait;
   * `maxRetries` such ends in a row without an event between them throw ConnectionFailed. */
  async *streamEvents(
    query: EventStreamQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<StreamedEvent, void, undefined> {
    const { after: start, max_events: maxEvents, timeout, ...filters } = query;
    let after = start ?? null;
    let seen = 0;
    let failures = 0; // ends in a row without an event
    let deadline: number | null = null; // performance.now() when `timeout` is over, from the first connection
    for (;;) {
      const left = maxEvents == null ? undefined : maxEvents - seen;
      let timeLeft = timeout ?? undefined;
      if (timeout != null) {
        if (deadline === null) deadline = performance.now() + timeout * 1000;
        else timeLeft = Math.max(0, deadline - performance.now()) / 1000;
      }
      const url = this.url(EVENTS_PATH, { ...filters, max_events: left, timeout: timeLeft });
      const headers: Record<string, string> = { ...this.auth(), Accept: EVENT_STREAM };
      if (after) headers["Last-Event-ID"] = headerValue("Last-Event-ID", after);
      const scope = linked(options?.signal, this.timeoutMs);
      let dropped: unknown = null;
      try {
        // not followed, as no call is: a redirect to another origin would drop the key and read as a 401
        const response = await this.fetchImpl(url, { headers, signal: scope.signal, redirect: "manual" });
        scope.answered();
        const redirect = notFollowed("GET", EVENTS_PATH, response);
        if (redirect) {
          await response.body?.cancel();
          throw redirect;
        }
        if (!response.ok) {
          throw errorFor(response.status, await response.text(), response.headers.get("X-Request-Id"));
        }
        const kind = (response.headers.get("Content-Type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
        if (kind !== EVENT_STREAM) {
          // another server at the URL: read as a stream it would end at once, with no event and no error
          await response.body?.cancel();
          throw new UnexpectedAnswer(
            `GET ${EVENTS_PATH}: ${response.status} is not an event stream (${kind || "no content type"})`,
            response.status,
            response.headers.get("X-Request-Id"),
          );
        }
        for await (const event of readEvents(response)) {
          after = event.cursor;
          seen += 1;
          failures = 0;
          yield event;
        }
      } catch (error) {
        if (options?.signal?.aborted) throw error;
        // not the connection, nor the timer (no headers within timeoutMs): not for a resume
        if (!(error instanceof TypeError) && !scope.signal.aborted) throw error;
        dropped = error;
      } finally {
        scope.abort(); // the loop was left early, or the stream is over: close the connection
        scope.done();
      }
      if (maxEvents != null && seen >= maxEvents) return; // the end the caller asked for
      if (deadline !== null && performance.now() >= deadline) return;
      if (failures >= this.retry.maxRetries) {
        const why = dropped === null ? "the server ended it before max_events or timeout" : describe(dropped);
        throw new ConnectionFailed(`event stream: ${why}`, dropped === null ? undefined : { cause: dropped });
      }
      await sleep(retryDelay(this.retry, failures), options?.signal);
      failures += 1;
    }
  }

  // --- sending -----------------------------------------------------------------------------------------
  private url(path: string, query?: Record<string, QueryValue>): string {
    return `${this.baseUrl}${path}${queryString(query)}`;
  }

  private auth(): Record<string, string> {
    return this.apiKey ? { Authorization: `Bearer ${this.apiKey}` } : {};
  }

  /** Send one call with retries and decode its answer; an error answer throws its APIError. */
  private async send<T>(call: Call, options?: WriteOptions): Promise<T> {
    const headers: Record<string, string> = { ...this.auth(), Accept: "application/json" };
    for (const [name, value] of Object.entries(call.headers ?? {})) headers[name] = headerValue(name, value);
    if (call.writes) {
      const key = options?.idempotencyKey ?? randomUuid();
      headers["Idempotency-Key"] = headerValue("Idempotency-Key", key);
    }
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const url = this.url(call.path, call.query);
    // not followed: fetch resends a POST redirected by 301/302 (any write, by 303) as a GET, whose answer
    // would read as the write's
    const init: RequestInit = { method: call.method, headers, body, redirect: "manual" };
    for (let attempt = 0; ; attempt += 1) {
      const last = attempt >= this.retry.maxRetries;
      let status: number;
      let text: string;
      let answer: Response;
      const scope = linked(options?.signal, this.timeoutMs);
      try {
        answer = await this.fetchImpl(url, { ...init, signal: scope.signal });
        text = await answer.text();
        status = answer.status;
      } catch (error) {
        if (options?.signal?.aborted) throw error;
        if (last)
          throw new ConnectionFailed(`${call.method} ${call.path}: ${describe(error)}`, { cause: error });
        await sleep(retryDelay(this.retry, attempt), options?.signal);
        continue;
      } finally {
        scope.done();
      }
      if (RETRY_STATUSES.has(status) && !last) {
        await sleep(retryDelay(this.retry, attempt, answer.headers.get("Retry-After")), options?.signal);
        continue;
      }
      const redirect = notFollowed(call.method, call.path, answer);
      if (redirect) throw redirect;
      if (!answer.ok) throw errorFor(status, text, answer.headers.get("X-Request-Id"));
      try {
        return JSON.parse(text) as T;
      } catch (error) {
        const requestId = answer.headers.get("X-Request-Id");
        throw new UnexpectedAnswer(`${call.method} ${call.path}: ${status} is not JSON`, status, requestId, {
          cause: error,
        });
      }
    }
  }
}

/** A random (version 4) UUID. Browsers expose crypto.randomUUID to secure contexts only (https,
 * localhost), so a page over plain http has getRandomValues alone. */
function randomUuid(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40; // version 4
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80; // the RFC 9562 variant
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** `value` as exactly one path segment. fetch's URL parser resolves a lone `.` or `..` (even
 * percent-encoded) as this folder or its parent, so those, and an empty value, cannot be sent. */
function segment(value: string): string {
  if (value === "" || value === "." || value === "..") {
    throw new RangeError(`${JSON.stringify(value)} cannot be sent as one path segment`);
  }
  return encodeURIComponent(value);
}

/** The events of a server-sent-event answer, as its body arrives. A dropped connection throws (a
 * TypeError, as fetch's own network errors). */
async function* readEvents(response: Response): AsyncGenerator<StreamedEvent, void, undefined> {
  if (response.body === null) return;
  const reader = response.body.getReader();
  const parser = new SseParser(response.status);
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    reader.releaseLock();
  }
}
