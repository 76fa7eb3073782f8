import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { freePort } from '@almanac/testing/free-port';
import { registerBuiltInKinds } from '@almanac/testing/built-in-kinds';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';

const ROOT = join(__dirname, '../../..');
const ADMIN = 'trace-admin-token-0123456789';

/**
 * The api role as a process of its own (OpenTelemetry's exporter loads Node's http module with a
 * dynamic import, which Jest's sandbox refuses), configured by nothing but the standard OTEL_*
 * variables: it exports its ingest spans over OTLP/HTTP to a collector (a test server here) and
 * sends what is batched when it stops.
 */
describe('OpenTelemetry export from a role', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let collector: Server;
  let posts: { url: string; type: string; body: Buffer }[];

  beforeAll(async () => {
    db = await createTestDatabase();
    await registerBuiltInKinds(db.dataSource, {});
    redis = await createTestRedis();
    collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const type = req.headers['content-type'] ?? '';
        posts.push({ url: req.url ?? '', type, body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': type }).end(type === 'application/json' ? '{}' : ''); // an empty response, in either encoding
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    await new Promise<void>((r) => collector.close(() => r()));
    await redis.cleanup();
    await db.drop();
  });

  it.each([
    [undefined, 'application/x-protobuf'], // the OTLP default
    ['http/json', 'application/json'],
  ])('exports the ingest span as almanac-api to OTEL_EXPORTER_OTLP_ENDPOINT, flushed at shutdown (OTEL_EXPORTER_OTLP_PROTOCOL %s: %s)', async (protocol, type) => {
    posts = [];
    const port = await freePort();
    const child = spawn(process.execPath, ['-r', './bench/lib/register.cjs', 'apps/api/src/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env, PORT: String(port), DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: redis.prefix,
        ALMANAC_ADMIN_TOKEN: ADMIN, ALMANAC_LOG_LEVEL: 'warn',
        ALMANAC_TRACING_CONTXT: 'explicit', // misspelt: named in a warning at boot, and ignored
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
        OTEL_BSP_SCHEDULE_DELAY: '60000', // nothing leaves before the shutdown's flush
        ...(protocol ? { OTEL_EXPORTER_OTLP_PROTOCOL: protocol } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<string>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? `exit ${code}`)));
    try {
      const base = `http://127.0.0.1:${port}`;
      for (let i = 0; ; i++) {
        const up = await fetch(`${base}/health/live`).then((r) => r.ok, () => false);
        if (up) break;
        if (i === 300 || child.exitCode !== null) throw new Error(`api did not start: ${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const tenant = await fetch(`${base}/v1/admin/tenants`, {
        method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'acme' }),
      }).then((r) => r.json() as Promise<{ apiKey: string }>);
      const job = await fetch(`${base}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
        body: JSON.stringify({ kind: 'noop', key: 'exported-1', runAt: new Date().toISOString() }),
      });
      expect(job.status).toBe(201);
      expect(posts).toEqual([]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe('SIGTERM'); // Nest closes the app, then raises the signal again
    expect(output).toContain('ALMANAC_TRACING_CONTXT is not a setting Almanac reads');
    expect(posts.map((p) => [p.url, p.type])).toEqual([['/v1/traces', type]]);
    const body = posts[0].body;
    expect(body.includes('almanac-api')).toBe(true);
    expect(body.includes('send noop')).toBe(true);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'; // the link's trace: hex in JSON, 16 bytes in protobuf
    expect(body.includes(type === 'application/json' ? traceId : Buffer.from(traceId, 'hex'))).toBe(true);
  }, 60_000);
});
