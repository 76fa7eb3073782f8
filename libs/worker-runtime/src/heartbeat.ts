import { HEARTBEAT_MS, type Liveness, LIVENESS_FLOOR_MS, Ticker, within } from '@almanac/platform';
import type { Logger } from 'pino';
import type { Executor } from './executor';
import type { PoolTaker } from './pool-taker';
import type { WorkerIdentity } from './worker-identity';

export interface HeartbeatOptions {
  identity: WorkerIdentity;
  taker: PoolTaker;
  executor: Executor;
  logger: Logger;
  /** Told after every beat: a heartbeat that stops ticking fails /health/live. */
  liveness?: Liveness;
}

/**
 * The worker's pulse, once a second: its row in `workers` (how the promoter tells it is alive)
 * and the renewal of leases of handlers that run long (docs/architecture.md, the road, step 7).
 */
export class Heartbeat {
  private readonly ticker: Ticker;
  /** Draining at shutdown: counted out of its pools' capacity, still beating while handlers finish. */
  private leaving = false;

  constructor(private readonly o: HeartbeatOptions) {
    const liveness = o.liveness && { of: o.liveness, name: 'worker-heartbeat', limitMs: LIVENESS_FLOOR_MS };
    this.ticker = new Ticker({ turn: () => this.runOnce(), everyMs: HEARTBEAT_MS, liveness });
  }

  /** The beat and the lease renewal are independent: a renewal waiting on a locked row must not make the worker look dead. */
  async runOnce(): Promise<void> {
    const beat = within(HEARTBEAT_MS * 2, this.o.identity.beat(this.o.identity.pools.map((p) => this.o.taker.runningIn(p)), this.leaving), 'heartbeat');
    const [b, leases] = await Promise.allSettled([beat, this.o.executor.extendLeases()]);
    if (b.status === 'rejected') this.o.logger.warn({ err: b.reason as unknown }, 'heartbeat not recorded');
    if (leases.status === 'rejected') this.o.logger.error({ err: leases.reason as unknown }, 'could not renew leases');
  }

  start(): void {
    this.ticker.start();
  }

  /** SIGTERM: the worker says it is leaving (its capacity no longer counts) and keeps beating while it drains. */
  async leave(): Promise<void> {
    this.leaving = true;
    await this.runOnce();
  }

  /** Stops beating (after the drain) and removes the worker's row: nothing of it is left to rescue. */
  async stop(): Promise<void> {
    await within(HEARTBEAT_MS * 2, this.ticker.stop(), 'last heartbeat').catch(() => undefined); // a turn in flight
    await within(HEARTBEAT_MS * 2, this.o.identity.leave(), 'worker leave').catch((err: unknown) =>
      this.o.logger.warn({ err }, 'could not remove this worker from the workers table; the rescue will'),
    );
  }
}
