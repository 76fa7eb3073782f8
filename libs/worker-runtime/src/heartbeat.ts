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
 * The worker's pulse, once a second: its row in `workers` (how the promoter tells it is alive),
 * and in a loop of its own the renewal of long handlers' leases (docs/architecture.md, the road,
 * step 7): a renewal waiting on the pool or a locked row must not delay a beat past WORKER_DEAD_AFTER_MS.
 */
export class Heartbeat {
  private readonly beats: Ticker;
  private readonly renewals: Ticker;
  /** Draining at shutdown: counted out of its pools' capacity, still beating while handlers finish. */
  private leaving = false;

  constructor(private readonly o: HeartbeatOptions) {
    const liveness = (name: string) => o.liveness && { of: o.liveness, name, limitMs: LIVENESS_FLOOR_MS };
    this.beats = new Ticker({ turn: () => this.beat(), everyMs: HEARTBEAT_MS, liveness: liveness('worker-heartbeat') });
    this.renewals = new Ticker({ turn: () => this.renewLeases(), everyMs: HEARTBEAT_MS, liveness: liveness('lease-renewal') });
  }

  /** One beat and one lease renewal (tests, shutdown). */
  async runOnce(): Promise<void> {
    await Promise.all([this.beat(), this.renewLeases()]);
  }

  /** The worker's row: alive, with its running handlers per pool. */
  beat(): Promise<void> {
    const beat = this.o.identity.beat(this.o.identity.pools.map((p) => this.o.taker.runningIn(p)), this.leaving);
    return within(HEARTBEAT_MS * 2, beat, 'heartbeat').catch((err: unknown) => this.o.logger.warn({ err }, 'heartbeat not recorded'));
  }

  /** Leases with less than two thirds left, and progress not written yet. */
  renewLeases(): Promise<void> {
    return this.o.executor.extendLeases().then(() => undefined, (err: unknown) => this.o.logger.error({ err }, 'could not renew leases'));
  }

  start(): void {
    this.beats.start();
    this.renewals.start();
  }

  /** SIGTERM: the worker says it is leaving (its capacity no longer counts) and keeps beating while it drains. */
  async leave(): Promise<void> {
    this.leaving = true;
    await this.beat();
  }

  /** Stops beating (after the drain) and removes the worker's row: nothing of it is left to rescue. */
  async stop(): Promise<void> {
    await within(HEARTBEAT_MS * 2, Promise.all([this.beats.stop(), this.renewals.stop()]), 'last heartbeat').catch(() => undefined); // turns in flight
    await within(HEARTBEAT_MS * 2, this.o.identity.leave(), 'worker leave').catch((err: unknown) =>
      this.o.logger.warn({ err }, 'could not remove this worker from the workers table; the rescue will'),
    );
  }
}
