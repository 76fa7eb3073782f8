import { ReadyQueues } from '@almanac/delivery';
import { DEFAULT_SHARE } from '@almanac/domain';
import { closeRedis, COARSE_WINDOW_MS, createDeliveryRedis, createRoleApp, loadConfig } from '@almanac/platform';
import { registerBuiltInKinds } from '@almanac/testing/built-in-kinds';
import { startRedisCluster, type TestRedisCluster } from '@almanac/testing/redis-cluster';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { ApiModule } from '../apps/api/src/api.module';
import { DispatcherModule } from '../apps/dispatcher/src/dispatcher.module';
import { PromoterModule } from '../apps/promoter/src/promoter.module';
import { WorkerModule } from '../apps/worker/src/worker.module';
import { pushHints } from '@almanac/testing/ready-hints';

const ADMIN = 'cluster-test-admin-token-0123';

/**
 * Every role in one process, as `npm start` runs them, on a real three-master Redis Cluster
 * (ALMANAC_REDIS_CLUSTER_NODES): jobs are ingested, handed through the hot queue to their pools'
 * ready lists, taken within per-tenant limits and run; then the node holding the hot queue loses
 * its data and every queued job still runs, once.
 */
describe('Almanac on a Redis Cluster (three masters)', () => {
  let cluster: TestRedisCluster;
  let db: TestDatabase;
  let app: INestApplication;
  let server: string;
  const prefix = `almanac-c-${randomBytes(4).toString('hex')}`;
  const admin = { Authorization: `Bearer ${ADMIN}` };
  const saved = { ...process.env };
  const onTeardown: (() => Promise<unknown>)[] = [];

  /** Waits (bounded) until every job of `keys` has ended as it should, polling the rows the roles write. */
  async function allSucceeded(tenantId: number, keys: string[], deadlineMs = 20_000): Promise<{ state: string; attempts: number }[]> {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const rows = await db.dataSource.query<{ state: string; attempts: number }[]>(
        `SELECT state, attempts FROM jobs WHERE tenant_id = $1 AND key = ANY($2::text[])`,
        [tenantId, keys],
      );
      if (rows.length === keys.length && rows.every((r) => r.state === 'd')) return rows;
      if (Date.now() > deadline) return rows;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    db = await createTestDatabase(12);
    await registerBuiltInKinds(db.dataSource);
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: 'redis://127.0.0.1:1', // unused: the cluster's seed nodes take its place
      ALMANAC_REDIS_CLUSTER_NODES: cluster.seeds,
      ALMANAC_QUEUE_PREFIX: prefix,
      ALMANAC_ADMIN_TOKEN: ADMIN,
      ALMANAC_LOG_LEVEL: 'silent',
      ALMANAC_OVERDUE_INTERVAL_MS: '200',
      ALMANAC_WORKER_CONCURRENCY: '20',
    };
    Object.assign(process.env, env); // feature settings are read from process.env as the modules build
    app = await createRoleApp([ApiModule, PromoterModule, DispatcherModule, WorkerModule], { config: loadConfig(env), role: 'all-in-one' });
    await app.listen(0, '127.0.0.1');
    server = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    for (const f of onTeardown) await f();
    await app?.close();
    await db?.drop();
    await cluster?.stop();
    process.env = saved;
  });

  it("puts different pools on different nodes, and everything a pool's scripts touch in its slot", async () => {
    const ready = new ReadyQueues(cluster.client, prefix);
    const nodes = new Set<number>();
    for (const pool of ['default', 'reports', 'mail', 'billing', 'ledger', 'webhooks']) {
      const base = ready.base(pool);
      const slot = await cluster.client.cluster('KEYSLOT', `${base}:tenants`);
      for (const key of [`${base}:q:7:noop`, `${base}:kinds:7`, `${base}:taken:3`, `${base}:limit:7:c`, `${base}:limit:7:noop:r`]) {
        expect(await cluster.client.cluster('KEYSLOT', key)).toBe(slot);
      }
      nodes.add((await cluster.nodeOf(`${base}:tenants`)).options.port!);
    }
    expect(nodes.size).toBeGreaterThan(1);
  });

  it('pushes, takes within limits, finishes and gives back on pools of different nodes through one auto-pipelined connection', async () => {
    // The delivery connection, as the dispatcher and workers use it: auto-pipelined, so calls for
    // different nodes made in one tick must not share a pipeline.
    const delivery = createDeliveryRedis({ url: 'redis://127.0.0.1:1', clusterNodes: cluster.nodes });
    onTeardown.push(() => closeRedis(delivery));
    const ready = new ReadyQueues(delivery, `${prefix}-ready`);
    const pools = ['default', 'reports', 'mail'];
    expect(new Set(await Promise.all(pools.map(async (p) => (await cluster.nodeOf(`${ready.base(p)}:tenants`)).options.port))).size).toBeGreaterThan(1);
    await Promise.all(pools.map((p) => ready.syncShares(p, new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 2 }]]))));
    const hints = (p: number) => Array.from({ length: 3 }, (_, i) => ({ id: String(p * 10 + i + 1), tenantId: 1, kind: 'noop', dueMs: Date.now() }));
    await Promise.all(pools.map((p, i) => pushHints(ready, p, hints(i))));
    const takes = await Promise.all(pools.map((p) => ready.take(p, 10, Date.now(), 'w1')));
    // Per pool, on a cluster: two each (the third of each pool waits for a slot).
    expect(takes.map((t) => t.hints.length)).toEqual([2, 2, 2]);
    await Promise.all(pools.map((p, i) => ready.finish(p, 'w1', [takes[i].hints[0]])));
    expect((await Promise.all(pools.map((p) => ready.take(p, 10, Date.now() + 1000, 'w1')))).map((t) => t.hints.length)).toEqual([1, 1, 1]);
    expect((await Promise.all(pools.map((p) => ready.giveBack(p, 'w1', 'all')))).map((ids) => ids.length)).toEqual([2, 2, 2]);
    expect(await ready.waiting(pools)).toEqual(new Map(pools.map((p) => [p, 2])));
  });

  it('ingests, dispatches within per-tenant limits and runs every job once', async () => {
    const http = () => request(server);
    const tenants = await Promise.all(['plain', 'capped', 'kind-capped'].map(async (name) => (await http().post('/v1/admin/tenants').set(admin).send({ name }).expect(201)).body as { id: number; apiKey: string }));
    await http().patch(`/v1/admin/tenants/${tenants[1].id}`).set(admin).send({ maxConcurrency: 3 }).expect(200);
    await http().patch(`/v1/admin/tenants/${tenants[2].id}`).set(admin).send({ kindLimits: { noop: { concurrency: 2, perSecond: 500 } } }).expect(200);
    const keys = Array.from({ length: 40 }, (_, i) => `now-${i}`);
    for (const t of tenants) {
      await http()
        .post('/v1/jobs/batch')
        .set({ Authorization: `Bearer ${t.apiKey}` })
        .send({ jobs: keys.map((key) => ({ kind: 'noop', key, runAt: new Date().toISOString() })) })
        .expect(200);
    }
    for (const t of tenants) {
      const rows = await allSucceeded(t.id, keys);
      expect(rows).toHaveLength(keys.length);
      expect(rows.every((r) => r.state === 'd' && r.attempts === 1)).toBe(true);
    }
  }, 40_000);

  it('recovers when the node holding the hot queue loses its data: every queued job still runs, once', async () => {
    const http = () => request(server);
    const t = (await http().post('/v1/admin/tenants').set(admin).send({ name: 'survivor' }).expect(201)).body as { id: number; apiKey: string };
    const runAt = new Date(Date.now() + 3000).toISOString();
    const keys = Array.from({ length: 30 }, (_, i) => `later-${i}`);
    await http().post('/v1/jobs/batch').set({ Authorization: `Bearer ${t.apiKey}` }).send({ jobs: keys.map((key) => ({ kind: 'noop', key, runAt })) }).expect(200);
    // A row an hour ahead waits in its coarse window's list, added in a pipeline with its marker.
    const farAt = Date.now() + 3_600_000;
    await http().post('/v1/jobs').set({ Authorization: `Bearer ${t.apiKey}` }).send({ kind: 'noop', key: 'far', runAt: new Date(farAt).toISOString() }).expect(201);
    // The hot queue's keys (and the promoter's epoch beside them) all hash to the prefix's slot.
    const node = await cluster.nodeOf(`{${prefix}}`);
    expect(await node.exists(`{${prefix}}:hot:delayed`)).toBe(1);
    expect(await node.llen(`{${prefix}}:hot:w:${Math.floor(farAt / COARSE_WINDOW_MS) * COARSE_WINDOW_MS}`)).toBe(1);
    await node.flushall();
    expect(await node.exists(`{${prefix}}:hot:delayed`)).toBe(0);
    const rows = await allSucceeded(t.id, keys);
    expect(rows).toHaveLength(keys.length);
    expect(rows.filter((r) => r.state === 'd' && r.attempts === 1)).toHaveLength(keys.length);
  }, 40_000);
});
