import { limitKeyBase, LimitSlots, readyListKey } from '@almanac/delivery';
import { DEFAULT_SHARE } from '@almanac/domain';
import { closeRedis, createDeliveryRedis, createRoleApp, loadConfig } from '@almanac/platform';
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

const ADMIN = 'cluster-test-admin-token-0123';

/**
 * Every role in one process, as `npm start` runs them, on a real three-master Redis Cluster
 * (ALMANAC_REDIS_CLUSTER_NODES): jobs are ingested, dispatched through the hot queue and the
 * ready lists, limited per tenant and run; then the node holding the hot queue loses its data
 * and every queued job still runs, once.
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

  it('puts different pools on different nodes, each pool’s two lists in one slot', async () => {
    const nodes = new Set<number>();
    for (const pool of ['default', 'reports', 'mail', 'billing', 'ledger', 'webhooks']) {
      const main = await cluster.nodeOf(readyListKey(prefix, pool, false, true));
      expect(await cluster.client.cluster('KEYSLOT', readyListKey(prefix, pool, true, true))).toBe(await cluster.client.cluster('KEYSLOT', readyListKey(prefix, pool, false, true)));
      nodes.add(main.options.port!);
    }
    expect(nodes.size).toBeGreaterThan(1);
  });

  it('takes, renews and releases limit slots of several tenants in one call (a script per tenant, each in its slot)', async () => {
    // The delivery connection, as the dispatcher and workers use it: auto-pipelined, so calls for
    // different nodes made in one tick must not share a pipeline.
    const delivery = createDeliveryRedis({ url: 'redis://127.0.0.1:1', clusterNodes: cluster.nodes });
    onTeardown.push(() => closeRedis(delivery));
    const slots = new LimitSlots(delivery, `${prefix}-slots`);
    // Tenants 1-3's keys are spread over more than one node, or this would prove nothing.
    const owners = await Promise.all([1, 2, 3].map(async (t) => (await cluster.nodeOf(limitKeyBase(`${prefix}-slots`, t, true))).options.port));
    expect(new Set(owners).size).toBeGreaterThan(1);
    const share = (maxConcurrency: number) => ({ ...DEFAULT_SHARE, maxConcurrency });
    const requests = [1, 2, 3, 1, 2, 3, 1].map((tenantId, i) => ({ id: String(i), tenantId, kind: 'noop', share: share(2) }));
    const answers = await slots.acquire(requests);
    // Two each; the third of tenant 1 waits. Answers come back in request order.
    expect(answers.map((a) => a.granted)).toEqual([true, true, true, true, true, true, false]);
    const held = answers.flatMap((a, i) => (a.granted ? [{ id: requests[i].id, tenantId: requests[i].tenantId, kind: 'noop', mask: a.mask, token: a.token }] : []));
    await slots.renew(held);
    expect(await Promise.all([1, 2, 3].map((t) => slots.held(t)))).toEqual([2, 2, 2]);
    await slots.release(held);
    expect(await Promise.all([1, 2, 3].map((t) => slots.held(t)))).toEqual([0, 0, 0]);
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
    // The hot queue's keys (and the promoter's epoch beside them) all hash to the prefix's slot.
    const node = await cluster.nodeOf(`{${prefix}}`);
    expect(await node.exists(`{${prefix}}:hot:delayed`)).toBe(1);
    await node.flushall();
    expect(await node.exists(`{${prefix}}:hot:delayed`)).toBe(0);
    const rows = await allSucceeded(t.id, keys);
    expect(rows).toHaveLength(keys.length);
    expect(rows.filter((r) => r.state === 'd' && r.attempts === 1)).toHaveLength(keys.length);
  }, 40_000);
});
