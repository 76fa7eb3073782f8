import { WaitTimeoutError } from '../time/within';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import IORedis from 'ioredis';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { TenantLabels } from './tenant-labels';

describe('TenantLabels', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await redis.cleanup();
  });

  it('labels the published top tenants by id and every other tenant "other"', async () => {
    const labels = new TenantLabels(redis.connection, redis.prefix);
    expect(labels.label(7)).toBe('other'); // nothing read yet

    await TenantLabels.publish(redis.connection, redis.prefix, [7, 12]);
    await labels.refresh();

    expect([labels.label(7), labels.label(12), labels.label(3)]).toEqual(['7', '12', 'other']);
  });

  it('keeps the last set when Redis does not answer in time, and ignores a damaged key', async () => {
    await TenantLabels.publish(redis.connection, redis.prefix, [5]);
    const labels = new TenantLabels(redis.connection, redis.prefix);
    await labels.refresh();
    expect(labels.label(5)).toBe('5');

    // A proxy to the real Redis that, once `stalled`, keeps the connection and drops every byte.
    let stalled = false;
    const sockets: Socket[] = [];
    const target = new URL(redis.url);
    const proxy: Server = createServer((client) => {
      const upstream = connect(Number(target.port || 6379), target.hostname);
      sockets.push(client, upstream);
      client.on('data', (b) => void (stalled || upstream.write(b)));
      upstream.on('data', (b) => void (stalled || client.write(b)));
      client.on('error', () => undefined);
      upstream.on('error', () => undefined);
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => proxy.once('listening', resolve));
    const viaProxy = new IORedis({ port: (proxy.address() as { port: number }).port, host: '127.0.0.1' });
    // Only the stalled read should run out of time: a busy CI host once took over 50 ms for the first read.
    const stallable = new TenantLabels(viaProxy, redis.prefix, 250);
    try {
      await viaProxy.ping();
      await stallable.refresh();
      expect(stallable.label(5)).toBe('5');
      stalled = true;
      await TenantLabels.publish(redis.connection, redis.prefix, [6]);
      await expect(stallable.refresh()).rejects.toBeInstanceOf(WaitTimeoutError);
      expect([stallable.label(5), stallable.label(6)]).toEqual(['5', 'other']); // the last set stays
    } finally {
      viaProxy.disconnect();
      for (const socket of sockets) socket.destroy();
      proxy.close();
    }

    await redis.connection.set(`${redis.prefix}:almanac:tenants:top`, 'x,9,,-1');
    await labels.refresh();
    expect([labels.label(5), labels.label(9)]).toEqual(['other', '9']);
  });
});
