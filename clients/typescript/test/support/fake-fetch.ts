/**
 * A scripted `fetch` for the offline tests: it records every request and answers from a
 * list (a JSON body with a status and headers, raw text, or an error to throw).
 */

import type { FetchFunction } from "../../src/index.js";

/** One request as the fake saw it. */
export interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  rawBody: unknown;
  signal: AbortSignal | undefined;
}

/** One scripted answer. */
export type Answer =
  | { status?: number; json?: unknown; text?: string; headers?: Record<string, string> }
  | { throws: unknown }
  | ((request: Recorded) => Answer | Promise<Answer>);

/** A fetch answering `answers` in order (the last one repeats), and what it was asked. */
export function fakeFetch(...answers: Answer[]): { fetch: FetchFunction; requests: Recorded[] } {
  const requests: Recorded[] = [];
  const fetch: FetchFunction = async (input, init) => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const request: Recorded = {
      url: input,
      method: init.method ?? "GET",
      headers,
      body: typeof init.body === "string" ? init.body : undefined,
      rawBody: init.body,
      signal: init.signal ?? undefined,
    };
    requests.push(request);
    let answer = answers[Math.min(requests.length - 1, answers.length - 1)];
    while (typeof answer === "function") answer = await answer(request);
    if (answer === undefined) throw new Error("fakeFetch: no answer scripted");
    if ("throws" in answer) throw answer.throws;
    const status = answer.status ?? 200;
    const responseHeaders = new Headers(answer.headers);
    let text = answer.text ?? "";
    if (answer.json !== undefined) {
      text = JSON.stringify(answer.json);
      if (!responseHeaders.has("content-type")) responseHeaders.set("content-type", "application/json");
    }
    return new Response(status === 204 ? null : text, { status, headers: responseHeaders });
  };
  return { fetch, requests };
}

/** A job view as the server writes it, with `fields` changed. */
export function jobView(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 7,
    tenant: "default",
    type: "echo",
    state: "pending",
    priority: 10,
    run_at: "2026-01-01T00:00:00Z",
    attempt: 0,
    max_attempts: 3,
    idempotency_key: null,
    key_scope: "retained",
    cancel_requested: false,
    last_error: null,
    payload: {},
    output: null,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    finished_at: null,
    parent_id: null,
    children: [],
    children_count: 0,
    concurrency_key: null,
    held: null,
    waiting_for: null,
    awaited: null,
    snoozes: 0,
    ...fields,
  };
}
