/**
 * The few declarations of Node's own modules the tests use (`node:test`,
 * `node:assert/strict`, `process.env`), so the package's only dev dependency stays
 * `typescript` (no `@types/node`). Tests only: the library itself needs none of Node.
 */

declare module "node:test" {
  interface TestContext {
    skip(message?: string): void;
    diagnostic(message: string): void;
    readonly name: string;
  }
  interface TestOptions {
    skip?: boolean | string;
    timeout?: number;
    concurrency?: boolean | number;
  }
  type TestFn = (t: TestContext) => void | Promise<void>;
  type HookFn = () => void | Promise<void>;
  interface Test {
    (name: string, fn: TestFn): Promise<void>;
    (name: string, options: TestOptions, fn: TestFn): Promise<void>;
  }
  interface Suite {
    (name: string, fn: () => void | Promise<void>): Promise<void>;
    (name: string, options: TestOptions, fn: () => void | Promise<void>): Promise<void>;
  }
  export const test: Test;
  export const it: Test;
  export const describe: Suite;
  export function before(fn: HookFn): void;
  export function after(fn: HookFn): void;
  export default test;
}

declare module "node:assert/strict" {
  interface Assert {
    (value: unknown, message?: string): asserts value;
    ok(value: unknown, message?: string): asserts value;
    equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
    notEqual(actual: unknown, expected: unknown, message?: string): void;
    deepEqual<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
    notDeepEqual(actual: unknown, expected: unknown, message?: string): void;
    match(value: string, pattern: RegExp, message?: string): void;
    fail(message?: string): never;
    throws(fn: () => unknown, expected?: unknown, message?: string): void;
    rejects(promise: Promise<unknown> | (() => Promise<unknown>), expected?: unknown, message?: string): Promise<void>;
  }
  const assert: Assert;
  export default assert;
}

declare const process: {
  readonly env: Record<string, string | undefined>;
};
