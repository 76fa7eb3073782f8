import { Clock, createRoleApp, HotQueue, loadConfig } from '@almanac/platform';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { registerBuiltInKinds } from '@almanac/testing/built-in-kinds';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { API_READY_NEEDS } from '../src/api-settings';
import { ApiModule } from '../src/api.module';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface ApiHarness {
  app: INestApplication;
  db: TestDatabase;
  redis: TestRedis;
  hot: HotQueue;
  /** The hints of row `id` on the hot queue: when each says it is due, and its envelope's state. */
  hints(id: string): Promise<{ dueMs: number; state: string }[]>;
  /** Base URL of the listening API, for clients other than supertest. */
  url: string;
  http: () => ReturnType<typeof request>;
  createTenant(name?: string, rateLimitPerSecond?: number): Promise<{ id: number; apiKey: string }>;
  /** A second api replica on the same database and Redis (its own caches), closed with this one. */
  replica(): Promise<{ url: string; http: () => ReturnType<typeof request> }>;
  close(): Promise<void>;
}

/**
 * The real api role (OpsModule + ApiModule, as bootstrapRole builds it) on a per-file database
 * and queue prefix. `env` adds or overrides ALMANAC_* settings (e.g. REDIS_URL of a dead port).
 */
export async function startApi(env: Record<string, string> = {}): Promise<ApiHarness> {
  const db = await createTestDatabase();
  await registerBuiltInKinds(db.dataSource, env); // as a worker with this environment would at boot
  const redis = await createTestRedis();
  const fullEnv = {
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    ALMANAC_QUEUE_PREFIX: redis.prefix,
    ALMANAC_ADMIN_TOKEN: ADMIN_TOKEN,
    ALMANAC_LOG_LEVEL: 'silent',
    ALMANAC_DB_POOL_SIZE: '4',
    ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '0', // tests page fast; load-shedding.spec turns it on
    ...env,
  };
  // Feature settings are read from process.env when the module graph is built.
  Object.assign(process.env, fullEnv);
  const app = await createRoleApp([ApiModule], { config: loadConfig(fullEnv), role: 'api', readyNeeds: API_READY_NEEDS });
  await app.listen(0, '127.0.0.1');
  // One listening server: supertest on a bare http.Server would listen anew per request.
  const server = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const hot = HotQueue.open(redis.connection, redis.prefix);
  const http = () => request(server);
  const replicas: INestApplication[] = [];
  return {
    app,
    db,
    redis,
    hot,
    async hints(id: string) {
      const held = (await hot.held()).filter((x) => x.hint.id === id);
      return held.map((x) => ({ dueMs: x.hint.dueMs, state: x.state })).sort((a, b) => a.dueMs - b.dueMs);
    },
    url: server,
    http,
    async createTenant(name = 'acme', rateLimitPerSecond?: number) {
      const res = await http()
        .post('/v1/admin/tenants')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send(rateLimitPerSecond === undefined ? { name } : { name, rateLimitPerSecond })
        .expect(201);
      const created = res.body as { id: number; apiKey: string };
      return { id: created.id, apiKey: created.apiKey };
    },
    async replica() {
      const other = await createRoleApp([ApiModule], { config: loadConfig(fullEnv), role: 'api', readyNeeds: API_READY_NEEDS });
      await other.listen(0, '127.0.0.1');
      replicas.push(other);
      const url = (await other.getUrl()).replace('[::1]', '127.0.0.1');
      return { url, http: () => request(url) };
    },
    async close() {
      for (const r of replicas) await r.close();
      await app.close();
      await hot.close();
      await redis.cleanup();
      await db.drop();
    },
  };
}

/** ISO time `ms` from now. */
export function inMs(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

export const MINUTE = 60_000;
export const HOUR = 3600_000;
export const DAY = 24 * HOUR;

/** The API's clock held still while `work` runs: no bucket refills, whatever the test's pace. */
export async function clockHeld<T>(h: ApiHarness, work: () => Promise<T>): Promise<T> {
  const clock = h.app.get<Clock>(Clock);
  const now = clock.now();
  const spy = jest.spyOn(clock, 'now').mockImplementation(() => now);
  try {
    return await work();
  } finally {
    spy.mockRestore();
  }
}
