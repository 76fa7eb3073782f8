import { Controller, Get, INestApplication, Inject, Module } from '@nestjs/common';
import { createServer } from 'node:net';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { freePort, freePorts } from '@almanac/testing/free-port';
import { createTestDatabase, TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, TestRedis } from '@almanac/testing/test-redis';
import { ALMANAC_CONFIG, AlmanacConfig } from '../config/almanac-config';
import { ConfigError } from '@almanac/config';
import { describeBootError, startRole } from './bootstrap-role';
import { MigrationError } from './migrate';

/** A stand-in role feature: injects what OpsModule provides without importing it. */
@Controller('probe')
class ProbeController {
  constructor(
    private readonly ds: DataSource,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
  ) {}

  @Get()
  async probe() {
    const [{ n }] = await this.ds.query<{ n: number }[]>('SELECT 1 AS n');
    return { n, prefix: this.config.queuePrefix };
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

describe('startRole', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    db = await createTestDatabase(2);
    redis = await createTestRedis();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  afterAll(async () => {
    await redis.cleanup();
    await db.drop();
  });

  it('listens on PORT with OpsModule plus the role modules, after migrating', async () => {
    const port = await freePort();
    const env = {
      PORT: String(port),
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      ALMANAC_QUEUE_PREFIX: redis.prefix,
      ALMANAC_LOG_LEVEL: 'silent',
      ALMANAC_HTTP_REQUEST_TIMEOUT_MS: '7000',
    };
    app = await startRole([ProbeModule], { role: 'probe', migrate: true, env });
    const base = `http://127.0.0.1:${port}`;
    expect((await request(base).get('/probe').expect(200)).body).toEqual({ n: 1, prefix: redis.prefix });
    // Readiness pings each server with a 1 s timeout; under the whole suite's load on 2 cores one
    // ping outlasted it (a 503 in CI). Ready means ready within a few probes, as Kubernetes asks.
    let ready = 0;
    for (let probe = 0; probe < 3 && ready !== 200; probe++) ready = (await request(base).get('/health/ready')).status;
    expect(ready).toBe(200);
    // The body timeout reaches Node's server: a slow sender is answered 408 and cut off.
    expect((app.getHttpServer() as { requestTimeout: number }).requestTimeout).toBe(7000);
  });

  it('serves /metrics only on ALMANAC_METRICS_PORT, and opens no admin port without admin routes', async () => {
    const [port, metricsPort, adminPort] = await freePorts(3);
    const env = {
      PORT: String(port),
      ALMANAC_METRICS_PORT: String(metricsPort),
      ALMANAC_ADMIN_PORT: String(adminPort),
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      ALMANAC_QUEUE_PREFIX: redis.prefix,
      ALMANAC_LOG_LEVEL: 'silent',
    };
    app = await startRole([ProbeModule], { role: 'probe', env });
    const base = `http://127.0.0.1:${port}`;
    const metrics = `http://127.0.0.1:${metricsPort}`;
    expect((await request(metrics).get('/metrics').expect(200)).text).toContain('process_cpu_seconds_total');
    await request(base).get('/metrics').expect(404);
    await request(base).get('/health/live').expect(200);
    await request(base).get('/probe').expect(200);
    await request(metrics).get('/health/live').expect(404);
    await request(metrics).get('/probe').expect(404);
    // No admin routes in this process: the admin port stays closed (free to bind).
    const probe = createServer();
    await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(adminPort, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    await app.close();
    app = undefined;
    await expect(request(metrics).get('/metrics')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('fails to start, naming the setting, when the metrics port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, resolve));
    const metricsPort = (taken.address() as { port: number }).port;
    const env = {
      PORT: String(await freePort()),
      ALMANAC_METRICS_PORT: String(metricsPort),
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      ALMANAC_QUEUE_PREFIX: redis.prefix,
      ALMANAC_LOG_LEVEL: 'silent',
    };
    try {
      const err = await startRole([ProbeModule], { role: 'probe', env }).then(() => null, (e: unknown) => e);
      expect(describeBootError(err)).toBe(`port ${metricsPort} is already in use (set ALMANAC_METRICS_PORT)`);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  it('refuses bad config before touching anything', async () => {
    await expect(startRole([], { role: 'probe', env: { PORT: 'abc' } })).rejects.toThrow(ConfigError);
  });

  it('fails when Postgres is unreachable instead of serving without it', async () => {
    const env = { PORT: String(await freePort()), DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/x`, ALMANAC_LOG_LEVEL: 'silent' };
    await expect(startRole([], { role: 'probe', env })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});

describe('describeBootError', () => {
  it('gives one line per kind of boot failure, without secrets', () => {
    expect(describeBootError(new ConfigError('PORT must be an integer from 1 to 65535 (got "abc")'))).toBe(
      'configuration error: PORT must be an integer from 1 to 65535 (got "abc")',
    );
    expect(describeBootError(new MigrationError('a migration failed on postgres://db/x: boom'))).toBe(
      'migration failed, not starting: a migration failed on postgres://db/x: boom',
    );
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect(describeBootError(refused, { DATABASE_URL: 'postgres://u:pw@127.0.0.1:5432/a' })).toBe(
      'cannot use Postgres at postgres://u:***@127.0.0.1:5432/a: connect ECONNREFUSED 127.0.0.1:5432 (is Postgres running?)',
    );
    const inUse = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE', port: 3000 });
    expect(describeBootError(inUse)).toBe('port 3000 is already in use (set PORT)');
    expect(describeBootError(new Error('odd'))).toBe('boot failed: odd');
  });
});
