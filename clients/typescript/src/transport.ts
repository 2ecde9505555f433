/**
 * The HTTP layer under the generated operations: builds the URL (base URL, encoded path,
 * query), sends the request with the global `fetch` (or one given), adds the bearer token
 * and the `X-Sluice-Tenant` header, decodes a success answer's body, and turns a failure
 * into a typed error ({@link SluiceError} for an error answer, {@link SluiceConnectionError}
 * when no answer came).
 *
 * Must not: know any route (the generated operations describe each request).
 */

import { SluiceConnectionError, decodeErrorAnswer, unexpectedAnswer } from "./errors.js";

/** A query parameter's value; `undefined` and `null` leave the parameter out. */
export type QueryValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | ReadonlyArray<string | number | boolean>;

/** A request body: JSON (serialised here) or raw bytes sent as they are. */
export type RequestBody =
  | { kind: "json"; contentType: string; value: unknown }
  | { kind: "raw"; contentType: string; value: unknown };

/** One request, as a generated operation describes it. */
export interface RequestSpec {
  method: string;
  /** The path with its parameters already encoded (`/v1/jobs/12`). */
  path: string;
  query?: Record<string, QueryValue>;
  headers?: Record<string, string | number | boolean | null | undefined>;
  body?: RequestBody;
}

/** Per-call options. */
export interface RequestOptions {
  /** Aborts the request; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

/** A success answer: its status, its decoded body and its headers. */
export interface ApiResponse<S extends number, T> {
  status: S;
  data: T;
  headers: Headers;
}

/** What the generated operations call. */
export interface Transport {
  request(spec: RequestSpec, options?: RequestOptions): Promise<ApiResponse<number, unknown>>;
}

/** The `fetch` function the transport uses (the global one by default). */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

/** How to reach the server. */
export interface TransportConfig {
  /** e.g. `http://127.0.0.1:8080` (a path prefix is kept: `https://host/sluice`). */
  baseUrl: string;
  /** A bearer token (`sluice_…`). */
  token: string;
  /** Sent as `X-Sluice-Tenant` (admin tokens only may name another tenant). */
  tenant?: string | undefined;
  /** Replaces the global `fetch` (tests, proxies, instrumentation). */
  fetch?: FetchFunction | undefined;
  /** Headers sent with every request. */
  headers?: Record<string, string> | undefined;
}

/** A path parameter, percent-encoded as one segment. */
export function encodePath(value: string | number | boolean): string {
  return encodeURIComponent(String(value));
}

/** `baseUrl` + `path` + the query string (parameters in the order given). */
export function buildUrl(
  baseUrl: string,
  path: string,
  query: Record<string, QueryValue> = {},
): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    const values = Array.isArray(value) ? value : [value];
    for (const one of values) search.append(name, String(one));
  }
  const text = search.toString();
  return baseUrl.replace(/\/+$/, "") + path + (text ? `?${text}` : "");
}

/** The JSON media types (`application/json`, `application/problem+json`, ...). */
export function isJsonContentType(contentType: string | null): boolean {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || type.endsWith("+json");
}

/** The {@link Transport} over `fetch`. */
export class FetchTransport implements Transport {
  readonly baseUrl: string;
  readonly tenant: string | undefined;
  readonly #token: string;
  readonly #fetch: FetchFunction;
  readonly #headers: Record<string, string>;

  constructor(config: TransportConfig) {
    if (!/^https?:\/\//i.test(config.baseUrl)) {
      throw new TypeError(`baseUrl must start with http:// or https://, got ${JSON.stringify(config.baseUrl)}`);
    }
    this.baseUrl = config.baseUrl.replace(/\/+$/, "");
    this.tenant = config.tenant;
    this.#token = config.token;
    this.#fetch = config.fetch ?? ((input, init) => fetch(input, init));
    this.#headers = { ...config.headers };
  }

  async request(spec: RequestSpec, options: RequestOptions = {}): Promise<ApiResponse<number, unknown>> {
    const url = buildUrl(this.baseUrl, spec.path, spec.query);
    const headers: Record<string, string> = {
      accept: "application/json",
      authorization: `Bearer ${this.#token}`,
      ...this.#headers,
    };
    if (this.tenant !== undefined) headers["x-sluice-tenant"] = this.tenant;
    for (const [name, value] of Object.entries(spec.headers ?? {})) {
      if (value !== undefined && value !== null) headers[name.toLowerCase()] = String(value);
    }
    Object.assign(headers, options.headers);
    const init: RequestInit = { method: spec.method, headers };
    if (options.signal) init.signal = options.signal;
    if (spec.body && spec.body.value !== undefined) {
      headers["content-type"] = spec.body.contentType;
      init.body =
        spec.body.kind === "json" ? JSON.stringify(spec.body.value) : (spec.body.value as BodyInit);
    }
    const what = `${spec.method} ${url}`;
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, init);
      text = await response.text();
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      throw new SluiceConnectionError(what, error);
    }
    if (!response.ok) throw decodeErrorAnswer(response.status, response.headers, text);
    return { status: response.status, data: decodeBody(response, text), headers: response.headers };
  }
}

/** A success answer's body: parsed JSON, the text of another media type, or `undefined`. */
function decodeBody(response: Response, text: string): unknown {
  if (text === "") return undefined;
  if (!isJsonContentType(response.headers.get("content-type"))) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw unexpectedAnswer(response.status, response.headers, `invalid JSON in a ${response.status} answer: ${text}`);
  }
}
