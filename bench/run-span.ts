/**
 * What an unsampled run's spans cost the worker: RunSpan made for a job and its handler run in the
 * span's context (a handler that returns at once), with no SDK span made. Modes, each a loop of
 * 200,000 runs, alternated, 6 rounds (the first warms the JIT up), median of the other 5:
 * - off: tracing off (no decision, the API's no-op tracer);
 * - linked: `parentbased_traceidratio` 0.1, the row's traceparent not sampled (the run follows it);
 * - root: `parentbased_traceidratio`, no traceparent, a trace id the ratio drops (ratio 0: the
 *   same id made and ratio check as the nine tenths 0.1 drops), with a LeanSpan sink as for OTLP
 *   protobuf (without one a root is the SDK's to decide: here, with no SDK, the no-op tracer's);
 * - always_off: no traceparent (under always_off a linked run is a root too).
 *
 *   node -r ./bench/lib/register.cjs bench/run-span.ts [off] [linked] [root] [always_off]
 */
import type { RunnableJob } from '../libs/persistence/src';
import { runSamplingFromEnv, setRunDecision } from '../libs/platform/src';
import type { LeanSpanSink } from '../libs/platform/src/tracing/lean-span';
import { RunSpan } from '../libs/worker-runtime/src/run-span';
import type { HandlerRun } from '../libs/worker-runtime/src/handler-run';

const row: RunnableJob = { id: '123456', tenantId: 1, kind: 'noop', key: 'k-1', payload: null, attempt: 1, maxAttempts: 3, traceParent: null };
const unsampledIngest = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';
const neverWritten = {} as LeanSpanSink; // nothing is sampled
const modes = {
  off: { decide: undefined, traceParent: null, sink: undefined },
  linked: { decide: runSamplingFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }).decide, traceParent: unsampledIngest, sink: neverWritten },
  root: { decide: runSamplingFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }).decide, traceParent: null, sink: neverWritten },
  always_off: { decide: runSamplingFromEnv({ OTEL_TRACES_SAMPLER: 'always_off' }).decide, traceParent: null, sink: neverWritten },
};
const done: HandlerRun = { outcome: { type: 'completed' } } as HandlerRun;
const handle = (): Promise<HandlerRun> => Promise.resolve(done);
const N = 200_000;

async function loop(mode: keyof typeof modes): Promise<number> {
  const { decide, traceParent, sink } = modes[mode];
  setRunDecision(decide, sink);
  const job = { ...row, traceParent };
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await new RunSpan(job, 'default', { fromMs: 1, toMs: 2 }).handler('noop', handle);
  return Number(process.hrtime.bigint() - t0) / N;
}

async function main(): Promise<void> {
  const named = process.argv.slice(2) as (keyof typeof modes)[]; // some modes only: `bench/run-span.ts linked root`
  const chosen = named.length ? named.filter((m) => m in modes) : (Object.keys(modes) as (keyof typeof modes)[]);
  const loops = Object.fromEntries(chosen.map((m) => [m, [] as number[]]));
  for (let r = 0; r < 6; r++) {
    for (const mode of chosen) {
      const ns = await loop(mode);
      if (r > 0) loops[mode].push(ns); // the first round warms the JIT up
    }
  }
  setRunDecision(undefined);
  const result: Record<string, number> = {};
  for (const [mode, ns] of Object.entries(loops)) {
    result[mode] = Math.round([...ns].sort((a, b) => a - b)[ns.length >> 1]);
    console.log(`${mode}: ${result[mode]} ns a run (median of ${ns.length} loops of ${N}; ${ns.map((x) => x.toFixed(0)).join(', ')})`);
  }
  console.log(JSON.stringify({ bench: 'run-span', nsPerRun: result }));
}

void main();
