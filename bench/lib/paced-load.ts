import { Agent, request } from 'node:http';

/**
 * An open-loop load generator: requests leave at a steady rate (one every 1/rate s), whatever
 * the server does, and each latency is measured from the moment the request was *due*, not
 * from when it was sent, so a stalled server cannot hide its stall (no coordinated omission;
 * the wrk2 way).
 *
 * Why not autocannon's `overallRate`: it gives each connection a per-second quota and resets it
 * on a 1 s interval, so every second's requests leave in one burst at the top of the second and
 * its p99 measures queueing behind its own burst, not the server at a steady 1,000 requests/s.
 */
export interface PacedRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface PacedResult {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  errors: number;
  /** Requests that left more than 2 ms after they were due: the generator itself fell behind. */
  lateSends: number;
}

export async function pacedLoad(opts: {
  url: string;
  rate: number;
  seconds: number;
  /** Most requests in flight at once; more wait (and their wait counts as latency). */
  maxInFlight?: number;
  next: (i: number) => PacedRequest;
}): Promise<PacedResult> {
  const { hostname, port } = new URL(opts.url);
  const agent = new Agent({ keepAlive: true, maxSockets: opts.maxInFlight ?? 64 });
  const total = Math.round(opts.rate * opts.seconds);
  const latencies = new Float64Array(total);
  let errors = 0;
  let lateSends = 0;
  let done = 0;
  let sent = 0;
  const start = performance.now();
  const interval = 1000 / opts.rate;

  await new Promise<void>((resolve) => {
    const finish = (i: number, ok: boolean) => {
      latencies[i] = performance.now() - (start + i * interval);
      if (!ok) errors++;
      if (++done === total) resolve();
    };
    const send = (i: number) => {
      const r = opts.next(i);
      const body = r.body === undefined ? undefined : Buffer.from(r.body);
      const headers = { ...r.headers, ...(body ? { 'Content-Length': String(body.length) } : {}) };
      const req = request({ agent, hostname, port, method: r.method, path: r.path, headers }, (res) => {
        res.resume();
        res.on('end', () => finish(i, (res.statusCode ?? 500) < 300));
        res.on('error', () => finish(i, false));
      });
      req.on('error', () => finish(i, false));
      req.end(body);
    };
    // A 1 ms tick sends every request that has come due; timers are not precise enough for
    // one timer per request, and the latency clock starts at the due time anyway.
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor((now - start) / interval) + 1);
      for (; sent < due; sent++) {
        if (now - (start + sent * interval) > 2) lateSends++;
        send(sent);
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  const seconds = (performance.now() - start) / 1000;
  agent.destroy();
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  const q = (p: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]);
  return { requests: total, seconds, rps: total / seconds, p50: q(0.5), p90: q(0.9), p99: q(0.99), max: round(sorted[sorted.length - 1]), errors, lateSends };
}

const round = (ms: number) => Math.round(ms * 100) / 100;
