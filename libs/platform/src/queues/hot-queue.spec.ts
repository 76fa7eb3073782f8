import type { Hint } from '@almanac/domain';
import { startPrivateRedis } from '@almanac/testing/private-redis';
import { bytesUnder, createTestRedis, TestRedis } from '@almanac/testing/test-redis';
import IORedis from 'ioredis';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { AddressInfo, connect, createServer, Socket } from 'node:net';
import { WaitTimeoutError } from '../time/within';
import { COARSE_WINDOW_MS, DELIVERY_LEAD_MS, REFINE_LEAD_MS } from './delivery-timing';
import { hintsOf } from './envelope';
import { HotQueue } from './hot-queue';

describe('HotQueue', () => {
  let redis: TestRedis;
  let hot: HotQueue;
  const now = new Date('2026-11-29T10:00:00.000Z');

  beforeAll(async () => {
    redis = await createTestRedis();
    hot = HotQueue.open(redis.connection, redis.prefix);
  });
  afterAll(async () => {
    await hot.close();
    await redis.cleanup();
  });

  it('adds envelopes of row references under the given prefix, delayed to a delivery lead before they are due; adding them again adds nothing', async () => {
    const later = { id: '101', dueMs: now.getTime() + 60_000, tenantId: 7, kind: 'noop' };
    const overdue = { id: '102', dueMs: now.getTime() - 5_000, tenantId: 8, kind: 'http' };
    await hot.enqueue([later, overdue], now);
    await hot.enqueue([later, overdue], now);
    expect(hot.prefix).toBe(redis.prefix);
    const delayed = await hot.queue.getDelayed();
    expect(delayed).toHaveLength(1);
    expect(hintsOf(delayed[0].data)).toEqual([later]);
    expect(delayed[0].opts.delay).toBe(60_000 - DELIVERY_LEAD_MS);
    expect(delayed[0].opts.removeOnComplete).toBeUndefined(); // the consumer's option, not stored per job
    const waiting = await hot.queue.getWaiting();
    expect(waiting.map((j) => hintsOf(j.data))).toEqual([[overdue]]);
    await hot.enqueue([], now);
    expect(await hot.queue.getJobCountByTypes('delayed', 'waiting')).toBe(2);
  });

  it('holds a day of sparse hints (one every 3 s, as 10 M jobs a year put in the hot tier) in under 100 bytes each (issue 31: ≤ 100 B a hot job)', async () => {
    const own = HotQueue.open(redis.connection, `${redis.prefix}-mem`);
    const t0 = now.getTime() + 3_600_000;
    const rows = Array.from({ length: 2000 }, (_, i) => ({ id: String(119_352_210_347_848 + i), dueMs: t0 + i * 3000 + (i % 7), tenantId: 1 + (i % 10), kind: 'noop' }));
    await own.enqueue(rows, now);
    expect((await bytesUnder(redis.connection, own.prefix)) / rows.length).toBeLessThan(100);
    await own.queue.obliterate({ force: true });
    await own.close();
  });

  it('holds sparse hints added a few at a time (the API at ingest: ~3 hot rows per request of 1,000 over a year) in under 100 bytes each', async () => {
    const own = HotQueue.open(redis.connection, `${redis.prefix}-trickle`);
    const t0 = now.getTime() + 3_600_000;
    const rows = Array.from({ length: 2000 }, (_, i) => ({ id: String(119_352_210_347_848 + i), dueMs: t0 + ((i * 7919) % 2000) * 3000, tenantId: 1 + (i % 10), kind: 'noop' }));
    for (let i = 0; i < rows.length; i += 3) await own.enqueue(rows.slice(i, i + 3), now);
    expect((await bytesUnder(redis.connection, own.prefix)) / rows.length).toBeLessThan(100);
    expect((await own.held()).map((x) => x.hint).sort((a, b) => a.dueMs - b.dueMs)).toEqual([...rows].sort((a, b) => a.dueMs - b.dueMs));
    await own.queue.obliterate({ force: true });
    await own.close();
  });

  it('puts far rows in their coarse window, one job per window; a window opened by a dispatcher refuses later rows, which get an envelope of their own', async () => {
    const own = HotQueue.open(redis.connection, `${redis.prefix}-windows`);
    const start = Math.floor((now.getTime() + 3_600_000) / COARSE_WINDOW_MS) * COARSE_WINDOW_MS;
    const a = { id: '201', dueMs: start + 5, tenantId: 1, kind: 'noop' };
    const b = { id: '202', dueMs: start + 60_000, tenantId: 2, kind: 'http' };
    await own.enqueue([a], now);
    await own.enqueue([b], now, { repair: true }); // a repair's far rows share the window too
    const [job, ...none] = await own.queue.getDelayed();
    expect(none).toEqual([]);
    expect(job.id).toBe(`w-${start}`);
    expect(job.opts.delay).toBe(start - REFINE_LEAD_MS - now.getTime());
    // A row into a window whose job is in costs one round trip: no BullMQ add (here the job is
    // taken away first, so an add would show).
    await job.remove();
    const c = { id: '204', dueMs: start + 70_000, tenantId: 3, kind: 'noop' };
    await own.enqueue([c], now);
    expect(await own.queue.getDelayed()).toEqual([]);
    const died = own.windows.drain(start, now.getTime()); // by a dispatcher that died after its first part
    expect((await died.next()).value).toEqual([a, b, c]);
    const late = { id: '203', dueMs: start + 90_000, tenantId: 1, kind: 'noop' };
    await own.enqueue([late], now);
    const parts: Hint[][] = [];
    for await (const part of own.windows.drain(start, now.getTime())) parts.push(part);
    expect(parts).toEqual([[a, b, c]]); // still there until drained, without the late row
    const envelopes = (await own.queue.getDelayed()).filter((j) => j.data.w === undefined);
    expect(envelopes.map((j) => hintsOf(j.data))).toEqual([[late]]);
    expect(await own.windows.peek(start)).toEqual([]);
    await own.queue.obliterate({ force: true });
    await own.close();
  });

  it('holds a burst of 200,000 rows due at once in under 100 bytes each (issue 31: a burst waits in Redis at ≤ 100 B a job)', async () => {
    const own = HotQueue.open(redis.connection, `${redis.prefix}-burst`);
    const rows = Array.from({ length: 200_000 }, (_, i) => ({ id: String(119_352_210_347_848 + i), dueMs: now.getTime() - (i % 50), tenantId: 1 + (i % 4), kind: i % 2 ? 'noop' : 'http' }));
    await own.enqueue(rows, now);
    expect((await bytesUnder(redis.connection, own.prefix)) / rows.length).toBeLessThan(100);
    await own.queue.obliterate({ force: true });
    await own.close();
  });

  it('bounds every wait on a Redis that accepts the connection and never answers (its connection has no command timeout)', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const connection = new IORedis({ port: (silent.address() as AddressInfo).port, host: '127.0.0.1', maxRetriesPerRequest: null });
    const stalled = HotQueue.open(connection, 'stalled', 200);
    try {
      const started = Date.now();
      await expect(stalled.enqueue([{ id: '1', dueMs: now.getTime(), tenantId: 1, kind: 'noop' }], now)).rejects.toBeInstanceOf(WaitTimeoutError);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      connection.disconnect();
      await stalled.close().catch(() => undefined);
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('keeps no command for later while Redis is down: 1,000 enqueues fail, leave no offline queue and never land; enqueue works once Redis is back', async () => {
    const server = await startPrivateRedis();
    // As OpsModule's queue connection (createDeliveryRedis): offline queue on, retried forever; reconnects fast here.
    const connection = new IORedis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 20 });
    connection.on('error', () => undefined);
    const outage = HotQueue.open(connection, 'outage', 100);
    const producer = outage.queue.opts.connection as IORedis;
    const queued = (c: IORedis) => (c as unknown as { offlineQueue: { length: number } }).offlineQueue.length;
    const near = (i: number) => ({ id: String(i), dueMs: now.getTime() + 1_000 + i, tenantId: 1, kind: 'noop' });
    const far = (i: number) => ({ id: String(i), dueMs: now.getTime() + 3_600_000 + i, tenantId: 1, kind: 'noop' });
    let restarted: ReturnType<typeof spawn> | undefined;
    try {
      await outage.enqueue([near(0), far(1)], now);
      await outage.queue.obliterate({ force: true });
      await server.stop();
      // An API under an outage: every request's enqueue gives up after its wait.
      const results = await Promise.allSettled(Array.from({ length: 1_000 }, (_, i) => outage.enqueue([i % 2 ? near(i) : far(i)], now)));
      expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1_000);
      // Before: 1,000 commands held in ioredis' offline queue, all sent on reconnect.
      expect(queued(producer) + queued(connection)).toBeLessThan(10);

      restarted = spawn('redis-server', ['--port', String(server.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      // Not events.once: it rejects on the refused connects before the server listens.
      await new Promise((resolve) => producer.once('ready', resolve));
      const back = near(5_000);
      await outage.enqueue([back], now);
      expect((await outage.held()).map((h) => h.hint)).toEqual([back]); // none of the failed adds landed late
    } finally {
      await outage.close().catch(() => undefined);
      connection.disconnect();
      if (restarted) {
        restarted.kill('SIGKILL');
        await once(restarted, 'exit');
      }
    }
  });

  it("gets a new Queue when Redis drops as BullMQ sets the first one up (its INFO): every enqueue failed for good", async () => {
    const server = await startPrivateRedis();
    // The producer's connection is cut at its second INFO (ioredis' ready check is the first;
    // BullMQ's version check the second), once; connections after it pass.
    let cut = 0;
    const sockets: Socket[] = [];
    const proxy = createServer((client) => {
      const upstream = connect(server.port, '127.0.0.1');
      sockets.push(client, upstream);
      let infos = 0;
      client.on('data', (chunk: Buffer) => {
        infos += chunk.toString().split(/\r\nINFO\r\n/i).length - 1;
        if (infos >= 2 && cut++ === 0) return void (client.destroy(), upstream.destroy());
        upstream.write(chunk);
      });
      upstream.pipe(client);
      for (const s of [client, upstream]) s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const connection = new IORedis({ port: (proxy.address() as AddressInfo).port, host: '127.0.0.1', maxRetriesPerRequest: null, retryStrategy: () => 20 });
    connection.on('error', () => undefined);
    const hot = HotQueue.open(connection, 'setup', 500);
    try {
      const hint = { id: '1', dueMs: now.getTime(), tenantId: 1, kind: 'noop' };
      let added = false;
      for (let i = 0; i < 20 && !added; i++) added = await hot.enqueue([hint], now).then(() => true, () => false);
      expect(added).toBe(true);
      expect(cut).toBeGreaterThanOrEqual(1); // BullMQ's setup was cut
      expect((await hot.held()).map((h) => h.hint)).toEqual([hint]);
    } finally {
      await hot.close().catch(() => undefined);
      connection.disconnect();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => proxy.close(resolve));
      await server.stop();
    }
  });

  it('replaces a Queue whose setup fails every time (INFO denied) at most once a second, not every round trip', async () => {
    const server = await startPrivateRedis();
    const admin = new IORedis(server.url);
    await admin.call('ACL', 'SETUSER', 'noinfo', 'on', '>pw', '~*', '&*', '+@all', '-info');
    const connection = new IORedis(server.url, { username: 'noinfo', password: 'pw', maxRetriesPerRequest: null, enableReadyCheck: false });
    connection.on('error', () => undefined);
    const denied = HotQueue.open(connection, 'denied', 200);
    try {
      const hint = { id: '1', dueMs: now.getTime(), tenantId: 1, kind: 'noop' };
      for (let i = 0; i < 50; i++) await expect(denied.enqueue([hint], now)).rejects.toBeDefined();
      const stats = String(await admin.call('INFO', 'commandstats'));
      const refused = Number(/cmdstat_info:.*rejected_calls=(\d+)/.exec(stats)?.[1] ?? 0);
      expect(refused).toBeGreaterThanOrEqual(1); // the setup was tried
      expect(refused).toBeLessThanOrEqual(3); // the first, the one replaced at once, maybe one a second later
    } finally {
      await denied.close().catch(() => undefined);
      connection.disconnect();
      admin.disconnect();
      await server.stop();
    }
  });
});
