import { setTimeout as sleep } from 'node:timers/promises';
import { completed, defineHandler } from '@almanac/kinds';
import { Type } from '@sinclair/typebox';

/** Longest `sleepMs` accepted: below the kind's 5 s timeout, so a sleeping noop still succeeds. */
export const NOOP_MAX_SLEEP_MS = 4000;

/**
 * Any payload at all (no `type`: objects, null, arrays…), as noop always took; only an object's
 * `sleepMs`, if present, is checked: the handler waits that long before it succeeds, so a bench
 * can give jobs a duration (`{"sleepMs": 50}`: how many run at once then means something).
 */
export const NoopPayloadSchema = Type.Unsafe<unknown>({
  properties: { sleepMs: Type.Integer({ minimum: 0, maximum: NOOP_MAX_SLEEP_MS, description: 'wait this long before succeeding' }) },
});

const sleepMsOf = (payload: unknown): number => {
  const ms = typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? (payload as { sleepMs?: unknown }).sleepMs : undefined;
  return typeof ms === 'number' ? ms : 0;
};

/** Succeeds (after `sleepMs`, if given): tests, benchmarks, and checking that a deployment delivers end to end. */
export const noopHandler = defineHandler<number>({
  kind: 'noop',
  timeoutMs: 5000,
  payloadSchema: NoopPayloadSchema,
  parse: sleepMsOf,
  handle: async (ctx, sleepMs) => {
    // Aborted by the timeout or a worker shutdown like any handler: the throw makes it a retry.
    if (sleepMs > 0) await sleep(sleepMs, undefined, { signal: ctx.signal });
    return completed();
  },
});
