import { createRoleApp, HotQueue, loadConfig, within } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { startPrivateRedis, type PrivateRedis } from '../../../test/support/private-redis';
import { DispatcherService } from './dispatcher.service';
import { DispatcherModule } from './dispatcher.module';

describe('the dispatcher role stopped while Redis stalls', () => {
  let db: TestDatabase;
  let server: PrivateRedis;

  beforeAll(async () => {
    db = await createTestDatabase(3);
    server = await startPrivateRedis();
  });
  afterAll(async () => {
    process.kill(server.pid, 'SIGCONT');
    await server.stop();
    await db.drop();
  });

  it('closes within seconds, leaving what it holds to another dispatcher: it waited for its hand-offs and the Worker\'s QUIT until SIGKILL', async () => {
    const env = { DATABASE_URL: db.url, REDIS_URL: server.url, ALMANAC_QUEUE_PREFIX: 'shutdown', ALMANAC_LOG_LEVEL: 'silent' };
    const app = await createRoleApp([DispatcherModule], { config: loadConfig(env), role: 'dispatcher' });
    await app.init();
    const service = app.get(DispatcherService);
    await service.observer.kindsRead;
    for (let i = 0; i < 100 && !service.consumer.worker.isRunning(); i++) await new Promise((r) => setImmediate(r));
    expect(service.consumer.worker.isRunning()).toBe(true);
    // An envelope coming out as Redis stops answering: the take, its push or its finish waits on the stalled server.
    const hot = HotQueue.open(server.connection, 'shutdown');
    await hot.enqueue([{ id: '1', dueMs: Date.now(), tenantId: 1, kind: 'noop' }], new Date());
    await hot.close();
    process.kill(server.pid, 'SIGSTOP');
    const started = Date.now();
    await within(15_000, app.close(), 'the dispatcher app closing');
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 30_000);
});
