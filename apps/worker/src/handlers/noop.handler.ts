import { completed, defineHandler } from '@almanac/delivery';

/** Succeeds at once: tests, benchmarks, and checking that a deployment delivers end to end. */
export const noopHandler = defineHandler<unknown>({
  kind: 'noop',
  timeoutMs: 5000,
  handle: async () => completed(),
});
