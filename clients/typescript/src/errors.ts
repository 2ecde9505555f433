/**
 * The client's errors: {@link SluiceError} (the server answered with an error: status,
 * code, message, `Retry-After`), {@link SluiceConnectionError} (no answer: refused, reset,
 * DNS, TLS) and {@link JobTimeoutError} (`wait` ran out of time before the job finished),
 * and the decoding of an error answer's `{"error": {"code", "message"}}` body.
 *
 * Must not: retry anything (the caller decides; `retryAfter` says how long the server asks).
 */

import type { ErrorDetail, JobView } from "./generated.js";

/** The error codes the API document lists (`ErrorDetail.code`). */
export type KnownErrorCode = ErrorDetail["code"];

/**
 * An error code: one the document lists, or any other string (a newer server may add
 * codes; the client keeps them as sent). `unexpected_response` is the client's own code
 * for an answer that is not the API's error shape (a proxy's HTML page, invalid JSON).
 */
export type ErrorCode = KnownErrorCode | "unexpected_response" | (string & {});

/** The server answered with an error status. */
export class SluiceError extends Error {
  override readonly name = "SluiceError";
  /** The HTTP status (400, 401, 404, 409, 429, 503, ...). */
  readonly status: number;
  /** The API's error code (`not_found`, `job_type_not_found`, `rate_limited`, ...). */
  readonly code: ErrorCode;
  /** Seconds the server asks to wait (`Retry-After` of 429 and 503), else `null`. */
  readonly retryAfter: number | null;

  constructor(status: number, code: ErrorCode, message: string, retryAfter: number | null = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/** No answer came: the connection was refused or reset, DNS or TLS failed. */
export class SluiceConnectionError extends Error {
  override readonly name = "SluiceConnectionError";
  /** `METHOD url` of the request that failed. */
  readonly request: string;

  constructor(request: string, cause: unknown) {
    super(`${request} failed: ${describeCause(cause)}`, { cause });
    this.request = request;
  }
}

/** `wait` ran out of time: the job was not finished; `job` is its last view. */
export class JobTimeoutError extends Error {
  override readonly name = "JobTimeoutError";
  readonly jobId: number;
  /** The job as the last answer showed it. */
  readonly job: JobView;
  /** The overall timeout given to `wait`, in milliseconds. */
  readonly timeoutMs: number;

  constructor(job: JobView, timeoutMs: number) {
    super(`job ${job.id} is still ${job.state} after waiting ${timeoutMs} ms`);
    this.jobId = job.id;
    this.job = job;
    this.timeoutMs = timeoutMs;
  }

  /** The job's state when the wait ended. */
  get state(): JobView["state"] {
    return this.job.state;
  }
}

/** `Retry-After` as seconds: an integer, or an HTTP date counted from now; else `null`. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null || value.trim() === "") return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The error of an error answer: its `error.code` and `error.message` when it has them. */
export function decodeErrorAnswer(status: number, headers: Headers, text: string): SluiceError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return unexpectedAnswer(status, headers, text);
  }
  const detail = (body as { error?: unknown } | null)?.error as
    | { code?: unknown; message?: unknown }
    | undefined;
  if (typeof detail?.code !== "string" || typeof detail.message !== "string") {
    return unexpectedAnswer(status, headers, text);
  }
  return new SluiceError(status, detail.code, detail.message, parseRetryAfter(headers.get("retry-after")));
}

/** An answer that is not the API's shape, with code `unexpected_response`. */
export function unexpectedAnswer(status: number, headers: Headers, text: string): SluiceError {
  const shown = text.length > 500 ? `${text.slice(0, 500)}…` : text;
  return new SluiceError(
    status,
    "unexpected_response",
    `unexpected ${status} answer: ${shown || "(empty body)"}`,
    parseRetryAfter(headers.get("retry-after")),
  );
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  const inner = (cause as { cause?: unknown }).cause;
  const code = (inner as { code?: unknown } | undefined)?.code;
  const detail = inner instanceof Error ? inner.message : undefined;
  return [cause.message, typeof code === "string" ? code : undefined, detail !== code ? detail : undefined]
    .filter(Boolean)
    .join(": ");
}
