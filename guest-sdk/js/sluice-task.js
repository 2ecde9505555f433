// Write a Sluice task in JavaScript: one synchronous function from a job to its output.
//
//   import { task, Retry, Fatal, log } from "./sluice-task.js";
//
//   export const run = task((job) => {
//     const args = job.json();                 // malformed JSON -> Fatal
//     if (!args.name) throw new Fatal("payload needs a name");
//     return { greeted: args.name };           // object -> JSON, string -> UTF-8, Uint8Array as is
//   });
//
// `task(handler)` returns the component's `run` export (the `sluice:task` world in the
// repository's `wit/`); build with `componentize-qjs --wit wit --world task --sync --js
// task.js -o task.wasm`. Returning completes the job; `throw new Retry(msg)` asks for another
// attempt with backoff; `throw new Fatal(msg)` sends the job to `dead` at once. Any other
// exception fails the attempt retryably with its message, its stack in the attempt's log.
// Under componentize-qjs the handler must be synchronous. Under componentize-js
// (StarlingMonkey, the engine with `fetch`, used for outbound HTTP: sluice-http.js) it may
// be `async`: the engine runs the event loop until the returned Promise settles.

import { log as hostLog, cancelled as hostCancelled } from "sluice:task/host@0.1.0";

/** Transient failure: the job is retried with backoff while attempts remain. */
export class Retry extends Error {
  constructor(message) {
    super(String(message));
    this.name = "Retry";
  }
}

/** Permanent failure: the job goes to `dead` at once, whatever attempts remain. */
export class Fatal extends Error {
  constructor(message) {
    super(String(message));
    this.name = "Fatal";
  }
}

/**
 * A follow-up job the host refused; nothing was buffered. `kind` is `unknown-job-type`,
 * `invalid` or `limit-exceeded` (sluice-jobs.js, contract 0.2; sluice-durable.js, 0.3).
 * Uncaught, it fails the attempt permanently: asking again would be refused again.
 */
export class EnqueueError extends Fatal {
  constructor(kind, detail) {
    super(`follow-up job refused: ${kind}: ${detail}`);
    this.name = "EnqueueError";
    this.kind = kind;
    this.detail = detail;
  }
}

// QuickJS has no TextEncoder/TextDecoder: UTF-8 through the URI functions, which throw
// URIError on invalid sequences.
function encodeUtf8(text) {
  const binary = unescape(encodeURIComponent(text));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function decodeUtf8(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
  }
  return decodeURIComponent(escape(binary));
}

/** UTF-8 bytes as text; invalid UTF-8 is replaced by U+FFFD where the engine has a
 * TextDecoder (StarlingMonkey), and throws URIError where it has not (QuickJS). */
export function fromUtf8(bytes) {
  if (typeof TextDecoder === "function") return new TextDecoder().decode(bytes);
  return decodeUtf8(bytes);
}

/** One attempt of one job (the WIT record `job`), with payload helpers. */
export class Job {
  constructor(raw) {
    /** The job's id (a number; exact below 2^53). */
    this.id = raw.id;
    this.jobType = raw.jobType;
    this.tenant = raw.tenant;
    this.attempt = raw.attempt;
    this.maxAttempts = raw.maxAttempts;
    /** The payload bytes (Uint8Array). */
    this.payload = raw.payload instanceof Uint8Array ? raw.payload : Uint8Array.from(raw.payload);
  }

  /** The payload as UTF-8 text; invalid UTF-8 is a Fatal error. */
  text() {
    try {
      return decodeUtf8(this.payload);
    } catch (e) {
      throw new Fatal("payload is not UTF-8");
    }
  }

  /** The payload parsed as JSON; a malformed payload is a Fatal error. */
  json() {
    const text = this.text();
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new Fatal(`payload is not valid JSON: ${e.message}`);
    }
  }

  /** True when a Retry from this attempt would send the job to `dead`. */
  isLastAttempt() {
    return this.attempt >= this.maxAttempts;
  }
}

/** Structured lines in the attempt's log (`[INFO] message`), capped per attempt. */
export const log = {
  trace: (message) => hostLog("trace", String(message)),
  debug: (message) => hostLog("debug", String(message)),
  info: (message) => hostLog("info", String(message)),
  warn: (message) => hostLog("warn", String(message)),
  error: (message) => hostLog("error", String(message)),
};

/** True once an operator cancelled this job or the host is shutting down. */
export function cancelled() {
  return hostCancelled();
}

/** Output (or payload) bytes: Uint8Array as is, string as UTF-8, anything else as JSON. */
export function toBytes(value) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof value === "string") return encodeUtf8(value);
  let json;
  try {
    json = JSON.stringify(value === undefined ? null : value);
  } catch (e) {
    throw new Fatal(`cannot serialize output as JSON: ${e.message}`);
  }
  return encodeUtf8(json);
}

/** The WIT `task-error` an exception becomes (a retry unless it is a Fatal). */
function taskError(e) {
  if (e instanceof Retry) return { tag: "retry", val: e.message };
  if (e instanceof Fatal) return { tag: "fatal", val: e.message };
  const message = e instanceof Error ? `${e.name}: ${e.message}` : `uncaught: ${String(e)}`;
  if (e instanceof Error && e.stack) hostLog("error", `${message}\n${e.stack}`);
  return { tag: "retry", val: message };
}

// componentize-js (StarlingMonkey, which has a global `fetch`) resolves a Promise returned
// by an export, running the event loop; componentize-qjs --sync (QuickJS: no `fetch`) does not.
const resolvesPromises = () => typeof globalThis.fetch === "function";

/**
 * Wrap `handler(job)` as the component's `run` export: `export const run = task(fn)`.
 * Its return value is the job's output: Uint8Array as is, string as UTF-8, anything else
 * as JSON. Retry and Fatal become the WIT `task-error` cases; other exceptions a retry.
 * An `async` handler (a returned Promise) needs componentize-js; under componentize-qjs
 * it is a Fatal error naming the problem.
 */
export function task(handler) {
  return function run(raw) {
    try {
      const output = handler(new Job(raw));
      if (output && typeof output.then === "function") {
        if (!resolvesPromises()) {
          throw new Fatal(
            "the task handler returned a Promise: it must be synchronous under componentize-qjs " +
              "(async handlers need componentize-js, docs/guests/javascript.md)",
          );
        }
        return Promise.resolve(output).then(toBytes).catch((e) => {
          throw taskError(e);
        });
      }
      return toBytes(output);
    } catch (e) {
      throw taskError(e);
    }
  };
}
