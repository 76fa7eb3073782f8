import { INestApplication } from '@nestjs/common';
import { createServer } from 'node:net';
import IORedis from 'ioredis';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '@almanac/testing/test-db';
import { type PrivateRedis, startPrivateRedis } from '@almanac/testing/private-redis';
import { Clock } from './clock/clock';
import { ALMANAC_CONFIG, AlmanacConfig } from './config/almanac-config';
import { MetricsService } from './metrics/metrics.service';
import { HotQueue } from './queues/hot-queue';
import { REDIS } from './redis/redis';
import { Liveness, LIVENESS_FLOOR_MS } from './health/liveness';
import { createOpsTestApp } from '@almanac/testing/ops-test-app';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('OpsModule', () => {
  let db: TestDatabase;
  // A server of its own: the stalled-Redis test pauses every client, and test files run in parallel.
  let redis: PrivateRedis & { prefix: string };

  beforeAll(async () => {
    db = await createTestDatabase(2);
    redis = Object.assign(await startPrivateRedis(), { prefix: 'ops-spec' });
  });
  afterAll(async () => {
    await redis.stop();
    await db.drop();
  });

  describe('with Postgres and Redis up', () => {
    let app: INestApplication;

    beforeAll(async () => {
      ({ app } = await createOpsTestApp({
        env: { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: redis.prefix },
      }));
    });
    let closed = false;
    afterAll(async () => {
      if (!closed) await app.close();
    });

    it('answers liveness', async () => {
      const res = await request(app.getHttpServer()).get('/health/live').expect(200);
      expect(res.body).toMatchObject({ status: 'ok' });
    });

    it('fails liveness, naming the loop, when a loop stops turning; passes again once it beats', async () => {
      const liveness = app.get(Liveness);
      liveness.beat('spec-loop', LIVENESS_FLOOR_MS, Date.now() - LIVENESS_FLOOR_MS - 1000); // its last turn ended 61 s ago
      const res = await request(app.getHttpServer()).get('/health/live').expect(503);
      expect(res.body).toMatchObject({ status: 'error', details: { loops: { status: 'down' } } });
      expect(JSON.stringify(res.body)).toMatch(/spec-loop \(no turn for 61 s\)/);
      liveness.beat('spec-loop', LIVENESS_FLOOR_MS);
      await request(app.getHttpServer()).get('/health/live').expect(200);
      liveness.forget('spec-loop');
    });

    it('is ready when Postgres and Redis answer', async () => {
      const res = await request(app.getHttpServer()).get('/health/ready').expect(200);
      expect(res.body).toMatchObject({ status: 'ok', details: { postgres: { status: 'up' }, redis: { status: 'up' } } });
    });

    it('stays ready while the role\'s pool is busy: its look at Postgres has a connection of its own, and a busy pool failed every replica at once (review)', async () => {
      const ds = app.get(DataSource);
      const size = (ds.options as { poolSize?: number }).poolSize ?? 10;
      const busy = Array.from({ length: size }, () => ds.query(`SELECT pg_sleep(1.5)`));
      try {
        const res = await request(app.getHttpServer()).get('/health/ready').expect(200);
        expect(res.body).toMatchObject({ details: { postgres: { status: 'up' } } });
      } finally {
        await Promise.all(busy);
      }
    });

    it('a look whose connection stops answering fails alone: the next connects anew (its one connection was held for TCP\'s minutes) (review)', async () => {
      await request(app.getHttpServer()).get('/health/ready').expect(200);
      const ds = app.get(DataSource);
      // The look's own backend: idle, its last query the ping, not this pool's.
      const mine = (await ds.query<{ pid: number }[]>(`SELECT pg_backend_pid() AS pid`))[0].pid;
      const pings = await ds.query<{ pid: number }[]>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle' AND query ILIKE 'SELECT 1%' AND pid <> $1`, [mine]);
      expect(pings.length).toBeGreaterThan(0);
      for (const { pid } of pings) process.kill(pid, 'SIGSTOP'); // a socket nobody answers
      try {
        await request(app.getHttpServer()).get('/health/ready').expect(503);
        await request(app.getHttpServer()).get('/health/ready').expect(200);
      } finally {
        for (const { pid } of pings) process.kill(pid, 'SIGCONT');
      }
    });

    it('reports a stalled Redis (connected, not answering) as not ready within about a second', async () => {
      const admin = new IORedis(redis.url);
      try {
        // Every client of this file's Redis waits.
        await admin.call('CLIENT', 'PAUSE', '2500', 'ALL');
        const t0 = Date.now();
        const res = await request(app.getHttpServer()).get('/health/ready').expect(503);
        expect(Date.now() - t0).toBeLessThan(2000);
        expect(res.body).toMatchObject({ status: 'error', details: { postgres: { status: 'up' }, redis: { status: 'down' } } });
      } finally {
        await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
        admin.disconnect();
      }
      await request(app.getHttpServer()).get('/health/ready').expect(200);
    });

    it('serves Prometheus text with default and almanac_ metrics', async () => {
      app.get(MetricsService).counter({ name: 'almanac_spec_total', help: 'from the spec' }).inc();
      await app.get(HotQueue).enqueue([{ id: '5', dueMs: Date.now() + 3600_000, tenantId: 1, kind: 'noop' }], new Date());
      const res = await request(app.getHttpServer()).get('/metrics').expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(res.text).toContain('process_cpu_user_seconds_total');
      expect(res.text).toContain('almanac_spec_total 1');
      expect(res.text).toMatch(/^almanac_redis_memory_bytes [1-9]\d*$/m);
      expect(res.text).toContain('almanac_redis_up 1');
      expect(res.text).toContain('almanac_queue_jobs{queue="hot",state="delayed"} 1');
    });

    it('provides the config, DataSource, Redis, hot queue and clock to feature code', async () => {
      const config = app.get<AlmanacConfig>(ALMANAC_CONFIG);
      expect(config.queuePrefix).toBe(redis.prefix);
      expect(app.get(DataSource).isInitialized).toBe(true);
      expect(await app.get(DataSource).query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      expect(await app.get<IORedis>(REDIS).ping()).toBe('PONG');
      expect(app.get(HotQueue).prefix).toBe(redis.prefix);
      expect(app.get(Clock).now()).toBeInstanceOf(Date);
    });

    it('accepts JSON bodies larger than express default 100 kB, up to the configured limit', async () => {
      // No route takes a body here; a 404 (not 413) shows the parser accepted 500 kB.
      const body = { blob: 'x'.repeat(500_000) };
      await request(app.getHttpServer()).post('/nowhere').send(body).expect(404);
    });

    it('closes the shared Redis connection on shutdown', async () => {
      const connection = app.get<IORedis>(REDIS);
      closed = true;
      await app.close();
      expect(connection.status).toBe('end');
    });
  });

  describe('with Redis unreachable', () => {
    let app: INestApplication;

    beforeAll(async () => {
      ({ app } = await createOpsTestApp({
        env: { DATABASE_URL: db.url, REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, ALMANAC_QUEUE_PREFIX: redis.prefix },
      }));
    });

    it('still boots and is live', async () => {
      await request(app.getHttpServer()).get('/health/live').expect(200);
    });

    it('is not ready, naming Redis', async () => {
      const res = await request(app.getHttpServer()).get('/health/ready').expect(503);
      expect(res.body).toMatchObject({
        status: 'error',
        details: { postgres: { status: 'up' }, redis: { status: 'down' } },
      });
    });

    it('is ready where only Postgres is needed (the api: ingest goes on while Redis is away)', async () => {
      const { app: api } = await createOpsTestApp({
        env: { DATABASE_URL: db.url, REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, ALMANAC_QUEUE_PREFIX: redis.prefix },
        readyNeeds: ['postgres'],
      });
      try {
        const res = await request(api.getHttpServer()).get('/health/ready').expect(200);
        expect(res.body).toMatchObject({ status: 'ok', details: { postgres: { status: 'up' } } });
        expect(res.body.details.redis).toBeUndefined();
      } finally {
        await api.close();
      }
    });

    it('still serves /metrics promptly, without the Redis-backed values', async () => {
      const started = Date.now();
      const res = await request(app.getHttpServer()).get('/metrics').expect(200);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(res.text).toContain('process_cpu_user_seconds_total');
      expect(res.text).toContain('almanac_redis_up 0');
      expect(res.text).toContain('almanac_redis_memory_bytes 0');
    });

    it('shuts down without waiting for Redis to come back', async () => {
      const started = Date.now();
      await app.close();
      expect(Date.now() - started).toBeLessThan(1000);
    });
  });
});
