// What the tests share: the live server they were given (LOCI_URL, LOCI_API_KEY, LOCI_READ_KEY, set by
// tests/integrations/test_typescript_client.py), fast retries, and fresh entity ids.
import { randomUUID } from "node:crypto";
import type { RetryPolicy } from "../src/index.js";

export const URL = process.env.LOCI_URL ?? "";
export const KEY = process.env.LOCI_API_KEY ?? "";
export const READ_KEY = process.env.LOCI_READ_KEY ?? "";
/** A reason to skip the tests that need a server, or false when one is given. */
export const NO_SERVER: string | false =
  URL && KEY ? false : "needs LOCI_URL and LOCI_API_KEY (a running loci serve)";
export const FAST: RetryPolicy = { maxRetries: 3, backoffMs: 10, maxBackoffMs: 50 };

export function entity(): string {
  return `ent:${randomUUID().slice(0, 10)}`;
}

export function portOf(url: string): number {
  return Number(new globalThis.URL(url).port);
}
