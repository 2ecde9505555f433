/**
 * `@sluice/client`: a typed client of Sluice's HTTP API. {@link SluiceClient} covers the
 * job routes; the generated layer (every schema as a type, every operation as a
 * function taking `client.transport`) covers the rest.
 *
 * Owns: the package's public surface (what is exported from where).
 */

export {
  SluiceClient,
  enqueueRequest,
  type CallOptions,
  type ClientOptions,
  type Enqueued,
  type EnqueueInput,
  type EnqueueOptions,
  type ListFilters,
} from "./client.js";
export {
  JobTimeoutError,
  SluiceConnectionError,
  SluiceError,
  decodeErrorAnswer,
  parseRetryAfter,
  type ErrorCode,
  type KnownErrorCode,
} from "./errors.js";
export {
  FetchTransport,
  buildUrl,
  encodePath,
  type ApiResponse,
  type FetchFunction,
  type QueryValue,
  type RequestBody,
  type RequestOptions,
  type RequestSpec,
  type Transport,
  type TransportConfig,
} from "./transport.js";
export {
  FINISHED_STATES,
  MAX_WAIT_CHUNK_MS,
  formatDuration,
  isFinished,
  waitChunks,
} from "./wait.js";
export * from "./generated.js";
