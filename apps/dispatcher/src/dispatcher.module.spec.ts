import { ReadyQueues } from '@almanac/delivery';
import { KindCatalog } from '@almanac/kinds';
import { KindsRepository } from '@almanac/persistence';
import { createRoleApp, HotQueue, loadConfig } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import type { INestApplication } from '@nestjs/common';
import { DispatcherService } from './dispatcher.service';
import { DispatcherModule } from './dispatcher.module';

describe('DispatcherModule wiring (the role as it boots)', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    db = await createTestDatabase(3);
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await app?.close();
    await redis.cleanup();
    await db.drop();
  });

  it('reads the kind registry before its first hot job: a job waiting at boot goes to its kind\'s pool, not default', async () => {
    await new KindsRepository(db.dataSource).register([{ kind: 'report', pool: 'reports', timeoutMs: 1000, payloadSchema: null }], 'w');
    const [{ id }] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES (1, 'boot-1', 'report', now(), 'q') RETURNING id::text AS id`,
    );
    const hot = HotQueue.open(redis.connection, redis.prefix);
    await hot.enqueue([{ id, dueMs: Date.now(), tenantId: 1, kind: 'report' }], new Date());
    await hot.close();

    const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: redis.prefix, ALMANAC_LOG_LEVEL: 'silent' };
    app = await createRoleApp([DispatcherModule], { config: loadConfig(env), role: 'dispatcher' });
    await app.init(); // the consumer starts here, with the job already waiting
    const consumer = app.get(DispatcherService).consumer;
    const ready = new ReadyQueues(redis.connection, redis.prefix);
    // No live worker in either pool: the job waits in the pool it was routed to.
    for (let i = 0; i < 200; i++) {
      const [inReports, inDefault] = await Promise.all(['reports', 'default'].map((p) => redis.connection.llen(`${ready.base(p)}:q:1:report`)));
      if (inReports + inDefault > 0) {
        expect([inReports, inDefault]).toEqual([1, 0]);
        return;
      }
      await consumer.runOnce(); // takes nothing the running worker already took; a tick if it is idle
    }
    throw new Error('the job was never dispatched');
  });

  it('takes no envelope until it has read the kind registry: one unreadable at boot would send a job of its own pool to default', async () => {
    await app?.close();
    const prefix = `${redis.prefix}-unread`; // apart from the first test's queue
    const [{ id }] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES (1, 'boot-2', 'report', now(), 'q') RETURNING id::text AS id`,
    );
    const hot = HotQueue.open(redis.connection, prefix);
    await hot.enqueue([{ id, dueMs: Date.now(), tenantId: 1, kind: 'report' }], new Date());
    await hot.close();
    const unreadable = jest.spyOn(KindCatalog.prototype, 'refresh').mockRejectedValueOnce(new Error('Connection terminated unexpectedly'));
    const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: prefix, ALMANAC_LOG_LEVEL: 'silent' };
    app = await createRoleApp([DispatcherModule], { config: loadConfig(env), role: 'dispatcher' });
    await app.init();
    const service = app.get(DispatcherService);
    expect(service.consumer.worker.isRunning()).toBe(false); // the rows wait in the hot queue
    unreadable.mockRestore();
    await service.observer.runOnce(); // the registry answers
    await service.observer.kindsRead;
    await new Promise((r) => setImmediate(r));
    expect(service.consumer.worker.isRunning()).toBe(true);
    const ready = new ReadyQueues(redis.connection, prefix);
    for (let i = 0; i < 200; i++) {
      const [inReports, inDefault] = await Promise.all(['reports', 'default'].map((p) => redis.connection.llen(`${ready.base(p)}:q:1:report`)));
      if (inReports + inDefault > 0) return expect([inReports, inDefault]).toEqual([1, 0]);
      await service.consumer.runOnce();
    }
    throw new Error('the job was never dispatched');
  });
});
