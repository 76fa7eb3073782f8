import { completed, defineHandler } from './handler';

/** Succeeds at once: tests, benchmarks, and checking that a deployment delivers end to end. */
export const noopHandler = defineHandler<unknown>({
  kind: 'noop',
  timeoutMs: 5000,
  handle: async () => completed(),
});
