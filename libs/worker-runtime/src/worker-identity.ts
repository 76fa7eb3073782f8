import type { WorkersRepository } from '@almanac/persistence';
import type { Logger } from 'pino';
import type { DatabaseClock } from '@almanac/platform';

/**
 * Who this worker process is to Postgres and Redis: its row in `workers` (the id its claims and
 * taken hints carry) and its name (ALMANAC_WORKER_ID, in history rows). A worker the rescue took
 * for dead finds its row gone at its next beat and registers again under a new id. Each register
 * and beat also sets `time` by the database's clock.
 */
export class WorkerIdentity {
  private current: number | undefined;

  constructor(
    private readonly repo: WorkersRepository,
    readonly name: string,
    readonly pools: readonly string[],
    readonly concurrency: number,
    private readonly logger: Logger,
    private readonly time?: DatabaseClock,
  ) {}

  /** The row id; a worker claims nothing before it registered. */
  get id(): number {
    if (this.current === undefined) throw new Error('worker not registered');
    return this.current;
  }

  async register(): Promise<void> {
    const sentMs = this.time?.local.now().getTime() ?? 0;
    const { id, dbNowMs } = await this.repo.register(this.name, this.pools, this.concurrency);
    this.time?.observe(dbNowMs, sentMs);
    this.current = id;
  }

  /** One heartbeat (`running`: per pool, in the order of `pools`); registers again if the rescue removed this worker meanwhile. */
  async beat(running: readonly number[], leaving: boolean): Promise<void> {
    if (this.current === undefined) return void (await this.register());
    const sentMs = this.time?.local.now().getTime() ?? 0;
    const dbNowMs = await this.repo.beat(this.current, running, leaving);
    if (dbNowMs !== null) return this.time?.observe(dbNowMs, sentMs);
    const old = this.current;
    await this.register();
    this.logger.warn({ previous: old, id: this.current }, 'this worker was taken for dead (its beats did not reach the database) and registered again');
  }

  /** Shutdown, after the drain: the row goes, so nothing is rescued for it. */
  async leave(): Promise<void> {
    if (this.current !== undefined) await this.repo.remove(this.current);
  }
}
