/**
 * What OpenTelemetry tracing costs (issue 34 item 3): the same runs in each mode, alternated
 * round by round, the same hour:
 * - `off`: no OTEL_* variable (the API's no-op spans);
 * - `on`: OTEL_EXPORTER_OTLP_ENDPOINT at an OTLP/HTTP sink in this process that reads and
 *   discards what it gets (protobuf, the default; OTEL_EXPORTER_OTLP_PROTOCOL=http/json in this
 *   process's environment for JSON), every trace sampled (the SDK's default);
 * - `ratio`: the same, sampling 10 % of traces (OTEL_TRACES_SAMPLER=parentbased_traceidratio,
 *   OTEL_TRACES_SAMPLER_ARG=0.1), as a busy installation would;
 * - `before` (with --before <checkout>): that checkout's code with no OTEL_* variable, to show
 *   that `off` costs nothing against code without tracing (build it first; see throughput.ts' --root).
 *
 *   npm run build
 *   node -r ./bench/lib/register.cjs bench/tracing.ts [--rounds 3] [--jobs 20000] [--rate 1500] [--seconds 10]
 *        [--modes off,on,ratio] [--before <checkout>]
 *
 * Per round and mode: bench/throughput.ts with one worker (20,000 no-op jobs due at once: the
 * drain rate, spans of the run only, as the bench writes rows straight in), then bench/stream.ts
 * at one rate (jobs POSTed through the api, so ingest spans too, and each run links to one: the
 * lag p50/p99). Both are children with this process's environment, which their roles inherit.
 * Prints each run, then medians per mode and on/off ratios, and one JSON line.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { arg, median, ROOT } from './lib/local';

interface Sink { url: string; requests: number; bytes: number; close(): Promise<void> }

async function startSink(): Promise<Sink> {
  const sink = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (sink.bytes += c.length));
    req.on('end', () => {
      sink.requests++;
      // An empty ExportTraceServiceResponse in the request's encoding (protobuf: no bytes).
      const json = req.headers['content-type'] === 'application/json';
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(sink, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  });
}

function runScript(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', './bench/lib/register.cjs', script, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${script} exited ${code}: ${out.slice(-2000)}`))));
  });
}

async function main(): Promise<void> {
  const rounds = Number(arg('rounds', '3'));
  const jobs = arg('jobs', '20000');
  const rate = Number(arg('rate', '1500'));
  const seconds = arg('seconds', '10');
  const sink = await startSink();
  const beforeRoot = arg('before', '');
  const modes = [...arg('modes', 'off,on,ratio').split(','), ...(beforeRoot ? ['before'] : [])];
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const protocol = process.env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  const envOf: Record<string, NodeJS.ProcessEnv> = {
    off: base,
    before: base,
    on: { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol },
    ratio: { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
  };
  const results: Record<string, { drain: number[]; p50: number[]; p99: number[] }> = Object.fromEntries(modes.map((m) => [m, { drain: [], p50: [], p99: [] }]));
  try {
    for (let r = 0; r < rounds; r++) {
      for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
        const env = envOf[mode];
        const root = mode === 'before' ? ['--root', beforeRoot] : [];
        const before = sink.requests;
        const tp = await runScript('bench/throughput.ts', ['--workers', '1', '--runs', '1', '--jobs', jobs, ...root], env);
        const drain = Number(/almanac, 1 worker process\(es\): (\d+)\/s/.exec(tp)?.[1]);
        const st = await runScript('bench/stream.ts', ['--rates', String(rate), '--seconds', seconds, '--runs', '1', ...root], env);
        const doc = JSON.parse(st.trim().split('\n').pop()!) as { summary: { almanac: Record<number, { p50: { median: number }; p99: { median: number } }> } };
        const lag = doc.summary.almanac[rate];
        results[mode].drain.push(drain);
        results[mode].p50.push(lag.p50.median);
        results[mode].p99.push(lag.p99.median);
        console.log(`round ${r + 1}, tracing ${mode}: drain ${drain}/s; at ${rate}/s lag p50 ${lag.p50.median.toFixed(1)} ms, p99 ${lag.p99.median.toFixed(1)} ms; OTLP requests ${sink.requests - before}`);
      }
    }
  } finally {
    await sink.close();
  }
  type Figure = 'drain' | 'p50' | 'p99';
  const m = (mode: string, k: Figure) => median(results[mode][k]);
  const vsOff = (mode: string, k: Figure) => Math.round((m(mode, k) / m('off', k)) * 1000) / 1000;
  console.log(`\nmedians of ${rounds}; ratios against off:`);
  console.log(`| mode | drain of ${jobs} jobs, 1 worker | lag p50 at ${rate}/s | lag p99 |`);
  console.log('|---|---:|---:|---:|');
  for (const mode of modes) {
    const x = (k: Figure) => (mode === 'off' || !results.off ? '' : ` (${vsOff(mode, k)})`);
    console.log(`| ${mode} | ${m(mode, 'drain').toFixed(0)}/s${x('drain')} | ${m(mode, 'p50').toFixed(1)} ms${x('p50')} | ${m(mode, 'p99').toFixed(1)} ms${x('p99')} |`);
  }
  const ratios = results.off ? Object.fromEntries(modes.filter((x) => x !== 'off').map((x) => [x, { drain: vsOff(x, 'drain'), p50: vsOff(x, 'p50'), p99: vsOff(x, 'p99') }])) : {};
  console.log(JSON.stringify({ bench: 'tracing', at: new Date().toISOString(), inputs: { rounds, jobs: Number(jobs), rate, seconds: Number(seconds), modes, before: beforeRoot || null, protocol }, results, ratiosAgainstOff: ratios, otlpRequests: sink.requests, otlpBytes: sink.bytes }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
