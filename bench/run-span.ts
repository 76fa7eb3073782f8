/**
 * What a run's spans cost the worker with tracing off (no SDK registered: the API's no-op
 * tracer): RunSpan made for a job, median of 5 loops of 200,000.
 *
 *   node -r ./bench/lib/register.cjs bench/run-span.ts
 */
import type { RunnableJob } from '../libs/persistence/src';
import { RunSpan } from '../libs/worker-runtime/src/run-span';

const row: RunnableJob = { id: '123456', tenantId: 1, kind: 'noop', key: 'k-1', payload: null, attempt: 1, maxAttempts: 3, traceParent: null };
const N = 200_000;
const loops: number[] = [];
for (let r = 0; r < 6; r++) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) new RunSpan(row, 'default', { fromMs: 1, toMs: 2 });
  if (r > 0) loops.push(Number(process.hrtime.bigint() - t0) / N); // the first loop warms the JIT up
}
const median = [...loops].sort((a, b) => a - b)[loops.length >> 1];
console.log(`RunSpan with tracing off: ${median.toFixed(0)} ns a run (median of ${loops.length} loops of ${N}; ${loops.map((x) => x.toFixed(0)).join(', ')})`);
console.log(JSON.stringify({ bench: 'run-span', nsPerRun: Math.round(median), loops: loops.map(Math.round) }));
