// When and how long to wait before another attempt: connection errors, 429 (honouring Retry-After) and
// 503 are retried with exponential backoff and jitter; every other answer is final.

export interface RetryPolicy {
  /** Attempts after the first. */
  maxRetries: number;
  /** The first wait, in milliseconds; each next one doubles, up to maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, backoffMs: 250, maxBackoffMs: 8000 };
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);
/** The defaults under `given`'s fields: one given as undefined keeps its default (a spread would not,
 * and `attempt >= undefined` never ends the retries); one that is no count or wait throws RangeError. */
export function retryPolicy(given: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy: RetryPolicy = {
    maxRetries: given.maxRetries ?? DEFAULT_RETRY.maxRetries,
    backoffMs: given.backoffMs ?? DEFAULT_RETRY.backoffMs,
    maxBackoffMs: given.maxBackoffMs ?? DEFAULT_RETRY.maxBackoffMs,
  };
  for (const [name, value] of Object.entries(policy)) {
    const count = name === "maxRetries";
    if (!(value >= 0 && (count ? Number.isInteger(value) : Number.isFinite(value)))) {
      const kind = count ? "a whole number" : "a number of milliseconds";
      throw new RangeError(`retry.${name} must be ${kind} >= 0`);
    }
  }
  return policy;
}

/** The longest Retry-After the client waits, in milliseconds. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** Milliseconds to wait after failed attempt number `attempt` (0-based). */
export function retryDelay(policy: RetryPolicy, attempt: number, retryAfter?: string | null): number {
  if (retryAfter != null && retryAfter.trim() !== "") {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds)) return Math.min(Math.max(seconds * 1000, 0), MAX_RETRY_AFTER_MS);
    const at = Date.parse(retryAfter); // the HTTP-date form (RFC 9110), which a proxy may send
    if (Number.isFinite(at)) return Math.min(Math.max(at - Date.now(), 0), MAX_RETRY_AFTER_MS);
  }
  const base = Math.min(policy.backoffMs * 2 ** attempt, policy.maxBackoffMs);
  return base * (0.5 + Math.random() / 2); // jitter: no synchronized retry storms
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
