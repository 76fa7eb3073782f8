import { HEARTBEAT_MS } from '@almanac/platform';
import pino from 'pino';
import type { Executor } from './executor';
import { Heartbeat } from './heartbeat';
import type { PoolTaker } from './pool-taker';
import type { WorkerIdentity } from './worker-identity';

// The loops' timing only: the beat and the renewal are stand-ins (executor.progress-and-leases.spec.ts runs them on Postgres).
describe('heartbeat', () => {
  afterEach(() => jest.useRealTimers());

  it('beats every second while a lease renewal hangs (a locked row, a pool with no free connection)', async () => {
    jest.useFakeTimers();
    const beats: number[] = [];
    const identity = { pools: ['default'], beat: async () => void beats.push(Date.now()), leave: async () => undefined } as unknown as WorkerIdentity;
    const taker = { runningIn: () => 0 } as unknown as PoolTaker;
    const executor = { extendLeases: () => new Promise<number>(() => undefined) } as unknown as Executor;
    const heartbeat = new Heartbeat({ identity, taker, executor, logger: pino({ level: 'silent' }) });
    heartbeat.start();
    await jest.advanceTimersByTimeAsync(4 * HEARTBEAT_MS + 10);
    expect(beats.length).toBeGreaterThanOrEqual(4); // one loop for both: 1, the next beat waiting for the renewal
    const stopped = heartbeat.stop();
    await jest.advanceTimersByTimeAsync(2 * HEARTBEAT_MS + 10); // the hung renewal's turn is given up at stop
    await stopped;
  });
});
