/**
 * What a run's spans cost the worker with the SDK on and exporting (issue 34 item 3): RunSpan made,
 * its handler run and its write ended for each of 50,000 jobs, then the batch processor flushed
 * to an OTLP/HTTP sink in this process that reads and discards. Per job, median of 5 loops (a
 * sixth warms up). The SDK is set up by startTracing from this process's OTEL_* variables, as a
 * worker does; with none set, the API's no-op spans. One mode a process:
 *
 *   node -r ./bench/lib/register.cjs bench/run-span-export.ts                      # tracing off
 *   OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1 \
 *     node -r ./bench/lib/register.cjs bench/run-span-export.ts --export             # 10 % sampled
 *   node -r ./bench/lib/register.cjs bench/run-span-export.ts --export --traceparent 01   # rows linked to a sampled ingest span
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import type { RunnableJob } from '../libs/persistence/src';
import { startTracing, stopTracing } from '../libs/platform/src/tracing/tracing';
import { RunSpan } from '../libs/worker-runtime/src/run-span';
import { arg } from './lib/local';

async function main(): Promise<void> {
  const exporting = process.argv.includes('--export');
  const flags = arg('traceparent', '');
  const N = Number(arg('jobs', '50000'));
  let requests = 0;
  const server = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end(req.headers['content-type'] === 'application/json' ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  if (exporting) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const choice = startTracing('bench');
  const traceParent = flags ? `00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-${flags}` : null;
  const row: RunnableJob = { id: '123456', tenantId: 1, kind: 'noop', key: 'k-1', payload: null, attempt: 1, maxAttempts: 3, traceParent };
  const outcome = { outcome: { type: 'completed' as const }, logger: () => { throw new Error('unused'); } };
  const loops: number[] = [];
  for (let r = 0; r < 6; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) {
      const span = new RunSpan(row, 'default', { fromMs: Date.now() - 1, toMs: Date.now() });
      await span.handler('noop', () => Promise.resolve(outcome as never));
      await span.write(() => Promise.resolve('applied'));
      if (i % 50 === 49) await new Promise(setImmediate); // a worker's I/O lets timers and the export's HTTP run
    }
    await (trace.getTracerProvider() as { forceFlush?: () => Promise<void> }).forceFlush?.();
    if (r > 0) loops.push(Number(process.hrtime.bigint() - t0) / N / 1000);
  }
  await stopTracing();
  server.close();
  const median = [...loops].sort((a, b) => a - b)[loops.length >> 1];
  const mode = `${choice}${exporting ? ` ${process.env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on'}${process.env.OTEL_TRACES_SAMPLER_ARG ? `=${process.env.OTEL_TRACES_SAMPLER_ARG}` : ''} ${process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? process.env.OTEL_EXPORTER_OTLP_PROTOCOL ?? ''}` : ''}${flags ? ` traceparent flags ${flags}` : ''}`;
  console.log(`${mode}: ${median.toFixed(2)} µs a job (median of ${loops.length} loops of ${N}: ${loops.map((x) => x.toFixed(2)).join(', ')}); OTLP requests ${requests}`);
  console.log(JSON.stringify({ bench: 'run-span-export', mode, usPerJob: Math.round(median * 100) / 100, loops, requests }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
