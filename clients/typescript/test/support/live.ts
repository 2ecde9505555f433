/**
 * What the live tests share: the server's address and token from the environment
 * (`SLUICE_URL`, `SLUICE_TOKEN`), the reason they skip without them, keys unique to this
 * run (the database outlives one run), and a check of a typed error.
 */

import assert from "node:assert/strict";

import { SluiceClient, SluiceError } from "../../src/index.js";

export const baseUrl = process.env["SLUICE_URL"] ?? "";
export const token = process.env["SLUICE_TOKEN"] ?? "";

/** Why the live tests skip, or false when they run. */
export const skipLive: string | false = !baseUrl
  ? "SLUICE_URL is not set: the live tests need a running `sluice serve` and worker (see README)"
  : !token
    ? "SLUICE_TOKEN is not set: the live tests need a tenant token of tenant `default`"
    : false;

/** A client of the live server with the tenant token. */
export function liveClient(): SluiceClient {
  return new SluiceClient(baseUrl, token);
}

const run = `ts-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** An idempotency key unique to this run. */
export function uniqueKey(name: string): string {
  return `${run}-${name}`;
}

/** Awaits `promise`, which must reject with a SluiceError of this status and code. */
export async function expectSluiceError(promise: Promise<unknown>, status: number, code: string): Promise<SluiceError> {
  const failure = await promise.then(
    (value) => assert.fail(`expected ${status} ${code}, got ${JSON.stringify(value)}`),
    (e: unknown) => e,
  );
  assert.ok(failure instanceof SluiceError, `expected a SluiceError, got ${String(failure)}`);
  assert.equal(failure.code, code, failure.message);
  assert.equal(failure.status, status);
  assert.ok(failure.message.length > 0);
  return failure;
}
