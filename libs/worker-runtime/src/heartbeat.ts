import type { WorkerRoster } from '@almanac/delivery';
import { type Clock, type Liveness, LIVENESS_FLOOR_MS, within } from '@almanac/platform';
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
  /** Told after every beat: a heartbeat that stops ticking fails /health/live. */
  liveness?: Liveness;
}

const LIVENESS_NAME = 'worker-heartbeat';

/**
 * The worker's pulse, once a second: tells the dispatcher it is alive and how much it can take
 * (concurrency and running handlers per pool), and renews the leases of handlers that run long.
 * A worker that dies stops both, so the dispatcher stops handing it work within the TTL and its
 * attempts are rescued within one lease.
 */
export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;
  /** Out of the roster (shutting down): leases are still renewed until the drain is over. */
  private left = false;

  constructor(private readonly o: HeartbeatOptions) {}

  /**
   * The roster entry and the lease renewal are independent: a Redis that hangs or refuses
   * writes must not stop leases from being renewed in Postgres (every long handler would be
   * rescued and run twice), and a slow Postgres must not make the worker look dead.
   */
  async runOnce(): Promise<void> {
    const [beat, leases] = await Promise.allSettled([this.beat(), this.o.executor.extendLeases()]);
    if (beat.status === 'rejected') this.o.logger.warn({ err: beat.reason as unknown }, 'heartbeat not recorded in Redis');
    if (leases.status === 'rejected') this.o.logger.error({ err: leases.reason as unknown }, 'could not renew leases');
  }

  private async beat(): Promise<void> {
    if (this.left) return;
    const { roster, taker, clock } = this.o;
    const beats = this.o.pools.map((pool) => ({ workerId: this.o.workerId, pool, concurrency: this.o.concurrency, running: taker.runningIn(pool) }));
    await within(HEARTBEAT_MS, roster.beat(beats, clock.now().getTime(), HEARTBEAT_TTL_MS), 'heartbeat');
  }

  start(): void {
    if (this.timer) return;
    this.o.liveness?.beat(LIVENESS_NAME, LIVENESS_FLOOR_MS);
    const tick = () => {
      void this.runOnce().finally(() => {
        if (this.timer) this.o.liveness?.beat(LIVENESS_NAME, LIVENESS_FLOOR_MS);
        if (this.timer) this.timer = setTimeout(tick, HEARTBEAT_MS);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  /**
   * Takes the worker out of its pools at once, so nothing more is handed to it, and keeps
   * renewing the leases of handlers still running (SIGTERM: they drain for up to the
   * shutdown time, which may be longer than a lease). Bounded: a Redis outage does not
   * hold up the shutdown.
   */
  async leave(): Promise<void> {
    this.left = true;
    await within(2 * HEARTBEAT_MS, this.o.roster.leave(this.o.workerId, this.o.pools), 'roster leave').catch(() => undefined);
  }

  /** Stops beating altogether (after the drain), leaving the roster too if not done yet. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.o.liveness?.forget(LIVENESS_NAME);
    if (!this.left) await this.leave();
  }
}
