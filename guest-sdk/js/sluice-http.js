// Outbound HTTP from a JavaScript task (contract 0.2), through the host's egress policy
// (docs/egress.md): a blocking client over the raw `wasi:http` bindings, so the handler
// stays synchronous and a refusal names the `wasi:http` error code.
//
//   import { Fatal, task } from "./sluice-task.js";
//   import { HttpError, http } from "./sluice-http.js";
//
//   export const run = task((job) => {
//     const res = http.get("https://api.example.com/rates", { timeoutMs: 5000 });
//     res.status, res.headers, res.body;      // number, [[name, Uint8Array]], Uint8Array
//     res.text(), res.json();                 // the body decoded / parsed
//     res.retryAfterMs();                     // what its Retry-After asks for, or null
//     http.post(url, { json: { amount: 42 }, headers: { authorization: "Bearer ..." } });
//     return res.json();
//   });
//
// Build with componentize-js (StarlingMonkey) against the world `task-http` of
// guest-sdk/js/wit: `componentize-js task.js --wit guest-sdk/js/wit --world-name task-http
// --disable fetch-event -o task.wasm` (docs/guests/javascript.md). A refused or failed
// request throws HttpError (a Retry) whose `code` is the wasi:http error-code name
// (`HTTP-request-denied`, `destination-IP-prohibited`, `connection-refused`, ...): rethrow
// it as a Fatal where a retry cannot help (a refused destination stays refused).
//
// The global `fetch` of StarlingMonkey works too (from an `async` handler), but a failed
// fetch rejects with `TypeError: NetworkError when attempting to fetch resource`, without
// the error code; this helper keeps it.

import { handle } from "wasi:http/outgoing-handler@0.2.12";
import {
  Fields,
  IncomingBody,
  OutgoingBody,
  OutgoingRequest,
  RequestOptions,
  httpErrorCode,
} from "wasi:http/types@0.2.12";
import { Retry, toBytes } from "./sluice-task.js";

// Bytes written per `blocking-write-and-flush` (its limit) and asked for per read.
const WRITE_CHUNK = 4096;
const READ_CHUNK = 64n * 1024n;

const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];

/**
 * A refused or failed request. `code` is the wasi:http error-code name
 * (`HTTP-request-denied`, `destination-IP-prohibited`, `connection-timeout`,
 * `HTTP-response-body-size`, ...; `invalid-request` for a request this helper could not
 * build, `invalid-response` for a body `json()` could not parse). Uncaught, it fails the
 * attempt retryably; throw `new Fatal(e.message)` where a retry cannot help. The host's
 * reason for a refusal is in the attempt's log.
 */
export class HttpError extends Retry {
  constructor(code, detail) {
    super(`HTTP request failed: ${code}${detail ? ` (${detail})` : ""}`);
    this.name = "HttpError";
    this.code = code;
    this.detail = detail;
  }
}

/** A response with its whole body read. Redirects are returned, never followed. */
export class Response {
  constructor(status, headers, body) {
    /** The status code (a number). */
    this.status = status;
    /** `[name, Uint8Array value]` pairs, lowercase names, in the order received. */
    this.headers = headers;
    /** The body bytes (Uint8Array). */
    this.body = body;
  }

  /** True for a 2xx status. */
  get ok() {
    return this.status >= 200 && this.status < 300;
  }

  /** The first value of header `name` (case-insensitive) as text, or null. */
  header(name) {
    const lower = String(name).toLowerCase();
    const found = this.headers.find(([n]) => n.toLowerCase() === lower);
    return found ? new TextDecoder().decode(found[1]) : null;
  }

  /**
   * How long the server asked to wait before trying again, in milliseconds: its
   * `Retry-After` header, as delay-seconds or an HTTP-date (a date in the past is 0); null
   * without one or when it is neither. `flow.snoozeWhenBusy` (sluice-durable.js) snoozes
   * for it.
   */
  retryAfterMs() {
    const value = this.header("retry-after");
    return value === null ? null : parseRetryAfterMs(value, Date.now());
  }

  /** The body as text (invalid UTF-8 is replaced by U+FFFD). */
  text() {
    return new TextDecoder().decode(this.body);
  }

  /** The body parsed as JSON; throws HttpError (`invalid-response`) if it is not JSON. */
  json() {
    try {
      return JSON.parse(this.text());
    } catch (e) {
      throw new HttpError("invalid-response", `JSON body: ${e.message}`);
    }
  }
}

// `Retry-After` (RFC 9110, section 10.2.3), read exactly as the Rust SDK reads it
// (guest-sdk/src/retry_after.rs): ASCII whitespace around it ignored; delay-seconds, or an
// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`); the obsolete RFC 850 and asctime forms
// are refused (the caller's default applies).
const WEEKDAYS = ["Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,", "Sun,"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DIGITS = /^[0-9]+$/;

/** The milliseconds a `Retry-After` value asks for from `nowMs`; a past date is 0; null
 * when it is neither form. */
function parseRetryAfterMs(value, nowMs) {
  const text = value.replace(/^[ \t\n\f\r]+|[ \t\n\f\r]+$/g, "");
  if (DIGITS.test(text)) return Number(text) * 1000;
  const at = imfFixdate(text);
  return at === null ? null : Math.max(0, at * 1000 - nowMs);
}

/** Seconds since the Unix epoch of an IMF-fixdate, or null. */
function imfFixdate(text) {
  const parts = text.split(" ");
  if (parts.length !== 6 || parts[5] !== "GMT") return null;
  const [weekday, day, month, year, clock] = parts;
  if (!WEEKDAYS.includes(weekday) || day.length !== 2 || year.length !== 4 || clock.length !== 8) return null;
  const monthIndex = MONTHS.indexOf(month);
  const fields = [day, year, ...clock.split(":")];
  if (monthIndex < 0 || fields.length !== 5 || !fields.every((f) => DIGITS.test(f))) return null;
  const [d, y, hour, minute, second] = fields.map(Number);
  if (d < 1 || d > 31 || y < 1970 || hour > 23 || minute > 59 || second > 60) return null;
  return daysSinceEpoch(y, monthIndex + 1, d) * 86400 + hour * 3600 + minute * 60 + second;
}

/** Days from 1970-01-01 to the civil date (Howard Hinnant's `days_from_civil`), with no
 * check of the day against the month (as the Rust SDK: `31 Feb` is `03 Mar`). */
function daysSinceEpoch(year, month, day) {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * ((month + 9) % 12) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

// The bindings throw a WIT `result`'s error as the value itself or as an Error carrying
// it in `payload`.
const errorOf = (e) => (e && e.payload !== undefined ? e.payload : e);

const invalid = (message) => new HttpError("invalid-request", message);

/** An `error-code` variant ({tag, val}) as an HttpError. */
function fromCode(code) {
  if (!code || typeof code.tag !== "string") return new HttpError("internal-error", String(code));
  const val = code.val;
  const detail =
    val === undefined || val === null
      ? ""
      : JSON.stringify(val, (_, v) => (typeof v === "bigint" ? String(v) : v));
  return new HttpError(code.tag, detail);
}

/** A `stream-error` ({tag: "closed"} or {tag: "last-operation-failed", val: io-error}). */
function fromStreamError(err) {
  if (err && err.tag === "closed") return new HttpError("connection-terminated", "the stream closed");
  if (err && err.tag === "last-operation-failed") {
    const code = httpErrorCode(err.val);
    if (code) return fromCode(code);
    return new HttpError("internal-error", err.val.toDebugString());
  }
  return new HttpError("internal-error", String(err));
}

/** Drops a resource now (children before parents), where the bindings allow it. */
function drop(resource) {
  if (resource && typeof resource[Symbol.dispose] === "function") resource[Symbol.dispose]();
}

function splitUrl(url) {
  const text = String(url);
  const sep = text.indexOf("://");
  if (sep < 0) throw invalid(`URL \`${text}\`: no scheme`);
  const scheme = text.slice(0, sep).toLowerCase();
  const rest = text.slice(sep + 3).split("#", 1)[0];
  const ends = [rest.indexOf("/"), rest.indexOf("?")].filter((i) => i >= 0);
  const end = ends.length ? Math.min(...ends) : rest.length;
  const authority = rest.slice(0, end);
  let path = rest.slice(end);
  if (!authority) throw invalid(`URL \`${text}\`: no host`);
  if (!path) path = "/";
  else if (path.startsWith("?")) path = "/" + path;
  return { scheme, authority, path };
}

function headerEntries(headers) {
  const pairs = Array.isArray(headers) ? headers : Object.entries(headers || {});
  return pairs.map(([name, value]) => [
    String(name).toLowerCase(),
    value instanceof Uint8Array ? value : toBytes(String(value)),
  ]);
}

function readAll(stream) {
  const chunks = [];
  let total = 0;
  for (;;) {
    let chunk;
    try {
      chunk = stream.blockingRead(READ_CHUNK);
    } catch (e) {
      const err = errorOf(e);
      if (err && err.tag === "closed") break;
      throw fromStreamError(err);
    }
    chunks.push(chunk);
    total += chunk.length;
  }
  const body = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.length;
  }
  return body;
}

/**
 * Writes and finishes `body`; false if the host closed its stream (the body is then
 * dropped unfinished: the response says why).
 */
function writeBody(body, data) {
  // The stream must be dropped before the body is finished (or dropped).
  const stream = body.write();
  let closed = false;
  for (let i = 0; i < data.length && !closed; i += WRITE_CHUNK) {
    try {
      stream.blockingWriteAndFlush(data.subarray(i, i + WRITE_CHUNK));
    } catch (e) {
      const err = errorOf(e);
      if (!err || err.tag !== "closed") throw fromStreamError(err);
      closed = true;
    }
  }
  drop(stream);
  if (closed) {
    drop(body);
    return false;
  }
  try {
    OutgoingBody.finish(body, undefined);
  } catch (e) {
    throw fromCode(errorOf(e));
  }
  return true;
}

/**
 * Send one request and read the whole response (blocking). `options`: `headers` (object
 * or `[name, value]` pairs; `host` and hop-by-hop headers are refused by the host),
 * `body` (Uint8Array or string), `json` (a value sent as a JSON body with `content-type:
 * application/json`), `timeoutMs` (for connecting, the first byte and between bytes; the
 * host clamps it to its caps and the attempt's time left).
 */
export function request(method, url, options = {}) {
  const pairs = headerEntries(options.headers);
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    if (!pairs.some(([name]) => name === "content-type")) {
      pairs.push(["content-type", toBytes("application/json")]);
    }
  }
  const data = body === undefined || body === null ? new Uint8Array(0) : toBytes(body);
  const { scheme, authority, path } = splitUrl(url);

  let fields;
  try {
    fields = Fields.fromList(pairs);
  } catch (e) {
    throw invalid(`headers: ${errorOf(e).tag || errorOf(e)}`);
  }
  const outgoing = new OutgoingRequest(fields);
  const upper = String(method).toUpperCase();
  try {
    outgoing.setMethod(METHODS.includes(upper) ? { tag: upper.toLowerCase() } : { tag: "other", val: String(method) });
    outgoing.setScheme(
      scheme === "https" ? { tag: "HTTPS" } : scheme === "http" ? { tag: "HTTP" } : { tag: "other", val: scheme },
    );
    outgoing.setAuthority(authority);
    outgoing.setPathWithQuery(path);
  } catch (e) {
    throw invalid(`URL \`${url}\``);
  }
  const outgoingBody = outgoing.body();

  let requestOptions;
  if (options.timeoutMs !== undefined && options.timeoutMs !== null) {
    const ns = BigInt(Math.max(0, Math.floor(Number(options.timeoutMs)))) * 1000000n;
    requestOptions = new RequestOptions();
    for (const set of ["setConnectTimeout", "setFirstByteTimeout", "setBetweenBytesTimeout"]) {
      try {
        requestOptions[set](ns);
      } catch (e) {
        // A value the host cannot represent: its own cap applies.
      }
    }
  }

  let future;
  try {
    future = handle(outgoing, requestOptions);
  } catch (e) {
    throw fromCode(errorOf(e));
  }
  // A body the host stops taking (over its cap, or the request refused) closes the
  // stream: why is the response's error code, so that is read first.
  const closed = !writeBody(outgoingBody, data);

  const ready = future.subscribe();
  ready.block();
  drop(ready);
  const got = future.get();
  drop(future);
  if (got === undefined || got === null) throw invalid("response not ready after waiting for it");
  if (got.tag !== "ok") throw invalid("response taken twice");
  if (got.val.tag !== "ok") throw fromCode(got.val.val);
  const response = got.val.val;
  if (closed) {
    drop(response);
    throw fromStreamError({ tag: "closed" });
  }

  const status = response.status();
  const headerFields = response.headers();
  const received = headerFields.entries().map(([name, value]) => [name, value]);
  drop(headerFields);
  const incoming = response.consume();
  const input = incoming.stream();
  const bytes = readAll(input);
  drop(input);
  drop(IncomingBody.finish(incoming));
  drop(response);
  return new Response(status, received, bytes);
}

/** `http.get(url, options)`, `http.post(url, options)`, `http.request(method, url, options)`. */
export const http = {
  request,
  get: (url, options = {}) => request("GET", url, options),
  post: (url, options = {}) => request("POST", url, options),
};
