import type { WorkerRoster } from '@almanac/delivery';
import type { Clock } from '@almanac/platform';
import type { Logger } from 'pino';
import type { Executor } from './executor';
import type { PoolTaker } from './pool-taker';

export const HEARTBEAT_MS = 1000;
/** A worker missing this many beats counts as gone: the dispatcher stops handing it work. */
const HEARTBEAT_TTL_MS = 5 * HEARTBEAT_MS;

export interface HeartbeatOptions {
  roster: WorkerRoster;
  taker: PoolTaker;
  executor: Executor;
  clock: Clock;
  logger: Logger;
  workerId: string;
  pools: readonly string[];
  concurrency: number;
  /** kind → pool for the kinds this worker serves */
  kinds: ReadonlyMap<string, string>;
}

/**
 * The worker's pulse, once a second: tells the dispatcher it is alive and how much it can take
 * (concurrency and running handlers per pool), and renews the leases of handlers that run long.
 * A worker that dies stops both, so the dispatcher stops handing it work within the TTL and its
 * attempts are rescued within one lease.
 */
export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: HeartbeatOptions) {}

  async runOnce(): Promise<void> {
    const { roster, taker, clock } = this.o;
    await roster.beat(
      this.o.pools.map((pool) => ({ workerId: this.o.workerId, pool, concurrency: this.o.concurrency, running: taker.runningIn(pool) })),
      this.o.kinds,
      clock.now().getTime(),
      HEARTBEAT_TTL_MS,
    );
    await this.o.executor.extendLeases();
  }

  start(): void {
    if (this.timer) return;
    const tick = () => {
      this.runOnce()
        .catch((err: unknown) => this.o.logger.error({ err }, 'heartbeat failed; retrying'))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, HEARTBEAT_MS);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  /** Stops beating and takes the worker out of its pools, so nothing more is handed to it. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.o.roster.leave(this.o.workerId, this.o.pools).catch(() => undefined);
  }
}
