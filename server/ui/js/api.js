// The REST API as the signed-in key sees it. The key lives in sessionStorage only (gone when the tab
// closes; never localStorage, never a cookie) and goes out as `Authorization: Bearer`.

import { SseParser } from "./sse.js";

const KEY_SLOT = "loci.apiKey";

export function getKey() {
  return sessionStorage.getItem(KEY_SLOT);
}

export function setKey(key) {
  sessionStorage.setItem(KEY_SLOT, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY_SLOT);
}

export class ApiError extends Error {
  constructor(status, body) {
    const text = body && body.message ? body.message : `HTTP ${status}`;
    super(text);
    this.status = status;
    this.code = body && body.error ? body.error : "http_error";
    this.details = (body && body.details) || {};
    this.requestId = body && body.request_id;
  }
}

/** Listeners for a 401 (the key is gone or revoked): the app signs out. */
const unauthorizedListeners = new Set();
export function onUnauthorized(fn) {
  unauthorizedListeners.add(fn);
}

function url(path, query) {
  const u = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    u.searchParams.set(name, String(value));
  }
  return u.pathname + u.search;
}

function headers(extra) {
  const key = getKey();
  const out = { Accept: "application/json", ...extra };
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

/** One API call; resolves to the decoded JSON body, rejects with ApiError. */
export async function request(method, path, { query, body, signal } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(url(path, query), init);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401) unauthorizedListeners.forEach((fn) => fn(error));
    throw error;
  }
  return data;
}

export const api = {
  get: (path, query, signal) => request("GET", path, { query, signal }),
  post: (path, body, query) => request("POST", path, { body, query }),
  patch: (path, body) => request("PATCH", path, { body }),
  del: (path) => request("DELETE", path, {}),
};

/** Every page of a list call (up to maxPages), following next_cursor. */
export async function listAll(path, query, maxPages = 10) {
  const items = [];
  let cursor;
  for (let page = 0; page < maxPages; page += 1) {
    const data = await api.get(path, { ...query, cursor });
    items.push(...data.items);
    cursor = data.next_cursor;
    if (!cursor) return { items, truncated: false };
  }
  return { items, truncated: true };
}

/**
 * Follow the live event stream (GET /v0/observability/events with Accept: text/event-stream) through
 * fetch() and a ReadableStream, reconnecting after errors with Last-Event-ID.
 * Calls onEvent(item, cursor) and onState("connecting" | "live" | "retrying" | "stopped", detail).
 * Returns a function that stops it.
 */
export function followEvents(query, { onEvent, onState }) {
  const controller = new AbortController();
  let lastId = null;
  let stopped = false;

  async function once() {
    onState("connecting");
    const extra = { Accept: "text/event-stream" };
    if (lastId) extra["Last-Event-ID"] = lastId;
    const response = await fetch(url("/v0/observability/events", query), {
      headers: headers(extra), signal: controller.signal, cache: "no-store",
    });
    if (!response.ok) {
      let body = null;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      const error = new ApiError(response.status, body);
      if (response.status === 401) unauthorizedListeners.forEach((fn) => fn(error));
      throw error;
    }
    onState("live");
    const parser = new SseParser();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      for (const event of parser.push(value)) {
        lastId = event.id || lastId;
        onEvent(JSON.parse(event.data), event.id);
      }
    }
  }

  (async () => {
    let delay = 1000;
    while (!stopped) {
      try {
        await once();
        delay = 1000; // the server ended the stream: reconnect soon, resuming after lastId
        if (!stopped) await new Promise((resolve) => setTimeout(resolve, 250));
      } catch (error) {
        if (stopped || error.name === "AbortError") break;
        if (error instanceof ApiError && error.status < 500 && error.status !== 429) {
          onState("stopped", error.message);
          return;
        }
        onState("retrying", error.message);
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 15000);
      }
    }
    onState("stopped");
  })();

  return () => {
    stopped = true;
    controller.abort();
  };
}
