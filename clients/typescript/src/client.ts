/**
 * {@link SluiceClient}: the ergonomic layer over the generated operations for the job
 * routes: enqueue (one or a batch), get, wait, list (a page, or every page as an async
 * iterator), cancel, retry, signal. Options are camelCase here and snake_case on the wire.
 *
 * Must not: build URLs or decode answers (the transport does) nor restate the API's types
 * (they come from `generated.ts`). Every other route is reachable through the generated
 * functions with `client.transport`.
 */

import {
  cancelJob,
  enqueue,
  enqueueBatch,
  getJob,
  listJobs,
  retryJob,
  sendSignal,
  type BatchItem,
  type EnqueueRequest,
  type JobListItem,
  type JobPage,
  type JobView,
  type JsonValue,
  type ListJobsArgs,
  type SignalSent,
} from "./generated.js";
import { FetchTransport, type FetchFunction, type RequestOptions, type Transport } from "./transport.js";
import { formatDuration, waitForJob } from "./wait.js";

/** How {@link SluiceClient} reaches the server, beyond its URL and token. */
export interface ClientOptions {
  /** Act for this tenant (`X-Sluice-Tenant`; only admin tokens may name another one). */
  tenant?: string;
  /** Replaces the global `fetch`. */
  fetch?: FetchFunction;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** Replaces the fetch transport altogether (then `tenant`, `fetch`, `headers` are unused). */
  transport?: Transport;
}

/** Per-call options: an `AbortSignal` and extra headers. */
export type CallOptions = RequestOptions;

/** How to enqueue a job (all optional; the server's defaults apply). */
export interface EnqueueOptions {
  /** `low` (0), `medium` (10, default), `high` (20), `critical` (30) or -32768..=32767. */
  priority?: EnqueueRequest["priority"];
  /** Run no earlier than this instant. Not with `delay`. */
  runAt?: Date | string;
  /**
   * Run no earlier than this long from now: a number of **milliseconds**, or an API
   * duration string (`30s`, `5m`, `2h`, `7d`, `250ms`). Not with `runAt`.
   */
  delay?: number | string;
  /** Attempts before the job is dead (default: its job type's). */
  maxAttempts?: number;
  /** A second enqueue with the same key (per tenant) returns the first job. */
  idempotencyKey?: string;
  /** `retained` (default: held while the job exists) or `unfinished` (freed when it ends). */
  keyScope?: EnqueueRequest["key_scope"];
  /** At most the type's `max_running_per_key` jobs with this key run at once. */
  concurrencyKey?: string;
}

/** One job of a batch. */
export interface EnqueueInput extends EnqueueOptions {
  type: string;
  /** Any JSON (default `{}`). */
  payload?: JsonValue;
}

/** The answer of {@link SluiceClient.enqueue}. */
export interface Enqueued {
  /** The job: the new one, or the one holding the idempotency key. */
  job: JobView;
  /** False when the idempotency key was taken (the server answered 200, not 201). */
  created: boolean;
}

/** Filters and paging of {@link SluiceClient.list} (`state`, `type`, `parent`, `limit`, `cursor`). */
export type ListFilters = ListJobsArgs;

/** The wire form of an enqueue. */
export function enqueueRequest(input: EnqueueInput): EnqueueRequest {
  const request: EnqueueRequest = { type: input.type };
  if (input.payload !== undefined) request.payload = input.payload;
  if (input.priority !== undefined) request.priority = input.priority;
  if (input.runAt !== undefined) {
    request.run_at = input.runAt instanceof Date ? input.runAt.toISOString() : input.runAt;
  }
  if (input.delay !== undefined) {
    request.delay = typeof input.delay === "number" ? formatDuration(input.delay) : input.delay;
  }
  if (input.maxAttempts !== undefined) request.max_attempts = input.maxAttempts;
  if (input.idempotencyKey !== undefined) request.idempotency_key = input.idempotencyKey;
  if (input.keyScope !== undefined) request.key_scope = input.keyScope;
  if (input.concurrencyKey !== undefined) request.concurrency_key = input.concurrencyKey;
  return request;
}

/** A client of one Sluice server, acting for one tenant. */
export class SluiceClient {
  /** The transport the generated functions take: `listJobTypes(client.transport)`. */
  readonly transport: Transport;

  /**
   * @param baseUrl e.g. `http://127.0.0.1:8080`
   * @param token a bearer token (`sluice_…`)
   */
  constructor(baseUrl: string, token: string, options: ClientOptions = {}) {
    this.transport =
      options.transport ??
      new FetchTransport({ baseUrl, token, tenant: options.tenant, fetch: options.fetch, headers: options.headers });
  }

  /** Enqueues one job (`POST /v1/jobs`). */
  async enqueue(
    type: string,
    payload?: JsonValue,
    options: EnqueueOptions = {},
    call?: CallOptions,
  ): Promise<Enqueued> {
    const body = enqueueRequest({ ...options, type, ...(payload === undefined ? {} : { payload }) });
    const answer = await enqueue(this.transport, { body }, call);
    return { job: answer.data, created: answer.status === 201 };
  }

  /** Enqueues up to 1000 jobs, all or none (`POST /v1/jobs:batch`): ids in request order. */
  async enqueueBatch(jobs: readonly EnqueueInput[], call?: CallOptions): Promise<BatchItem[]> {
    const answer = await enqueueBatch(this.transport, { body: { jobs: jobs.map(enqueueRequest) } }, call);
    return answer.data.jobs;
  }

  /** One job with its payload and output (`GET /v1/jobs/{id}`). */
  async get(id: number, call?: CallOptions): Promise<JobView> {
    return (await getJob(this.transport, { id }, call)).data;
  }

  /**
   * Waits up to `timeoutMs` milliseconds for the job to finish (`completed`, `dead` or
   * `cancelled`) and returns it; rejects with `JobTimeoutError` (its `job` is the last
   * view) when the time runs out first. Long waits are cut into `?wait=` requests of at
   * most 60 s. `signal` aborts the wait (the promise rejects with its reason).
   */
  wait(id: number, timeoutMs: number, call: CallOptions = {}): Promise<JobView> {
    const fetchJob = async (wait: string | undefined) =>
      (await getJob(this.transport, wait === undefined ? { id } : { id, wait }, call)).data;
    return waitForJob({ fetchJob }, timeoutMs, call.signal);
  }

  /** One page of jobs, newest first (`GET /v1/jobs`); `next_cursor` is null on the last. */
  async list(filters: ListFilters = {}, call?: CallOptions): Promise<JobPage> {
    return (await listJobs(this.transport, filters, call)).data;
  }

  /** Every job matching `filters`, newest first, fetching pages of `limit` as it goes. */
  async *listAll(filters: Omit<ListFilters, "cursor"> = {}, call?: CallOptions): AsyncGenerator<JobListItem, void, undefined> {
    let cursor: string | null = null;
    do {
      const page: JobPage = await this.list(cursor === null ? filters : { ...filters, cursor }, call);
      yield* page.jobs;
      cursor = page.jobs.length > 0 ? page.next_cursor : null;
    } while (cursor !== null);
  }

  /** Cancels a pending job, or asks a running one to stop (`POST /v1/jobs/{id}/cancel`). */
  async cancel(id: number, call?: CallOptions): Promise<JobView> {
    return (await cancelJob(this.transport, { id }, call)).data;
  }

  /** Runs a dead or cancelled job again with fresh attempts (`POST /v1/jobs/{id}/retry`). */
  async retry(id: number, call?: CallOptions): Promise<JobView> {
    return (await retryJob(this.transport, { id }, call)).data;
  }

  /** Sends a signal to a job (`POST /v1/jobs/{id}/signals/{name}`). */
  async signal(id: number, name: string, payload?: JsonValue, call?: CallOptions): Promise<SignalSent> {
    const body = payload === undefined ? {} : { payload };
    return (await sendSignal(this.transport, { id, name, body }, call)).data;
  }
}
