import { KIND_ASSERT_EVERY_MS, type KindRegistration, type KindsRepository } from '@almanac/persistence';
import { Ticker } from '@almanac/platform';
import type { Logger } from 'pino';
import { markSuperseded } from './handler';
import type { HandlerRegistry } from './handler-registry';

/**
 * A worker's kinds in the registry: asserted before it takes work and every KIND_ASSERT_EVERY_MS
 * after, so the registry keeps the newest definition still asserted (REGISTER_KINDS_SQL).
 */
export class KindAssertion {
  private readonly ticker: Ticker;
  /** Kinds whose chosen definition is another worker's, with its pool: each said once, not every 30 s. */
  private superseded = new Map<string, string>();

  constructor(
    private readonly kinds: KindsRepository,
    readonly registrations: readonly KindRegistration[],
    private readonly workerId: string,
    private readonly logger: Logger,
    /** The handlers it runs: a superseded definition leaves payloads its schema refuses to the definition in use (handlerPayload). */
    private readonly handlers?: HandlerRegistry,
  ) {
    this.ticker = new Ticker({
      turn: () => this.runOnce(),
      everyMs: KIND_ASSERT_EVERY_MS,
      firstAfterMs: KIND_ASSERT_EVERY_MS,
      onError: (err) => logger.warn({ err }, 'could not assert the kinds in the registry; trying again'),
      unref: true,
    });
  }

  async runOnce(): Promise<void> {
    const { moved, superseded } = await this.kinds.register(this.registrations, this.workerId);
    for (const m of moved) this.logger.warn({ kind: m.kind, from: m.previousPool }, 'kind moved to another pool by this registration');
    const now = new Map(superseded.map((s) => [s.kind, s.pool]));
    for (const [kind, pool] of now) {
      if (this.superseded.get(kind) === pool) continue;
      const own = this.registrations.find((r) => r.kind === kind)?.pool;
      this.logger.warn({ kind, pool, ownPool: own }, "another live worker build defines this kind differently, and its definition is the one in use (a rolling update, or deployments that disagree)");
    }
    for (const kind of this.superseded.keys()) if (!now.has(kind)) this.logger.info({ kind }, "this worker's definition of the kind is in use again");
    this.superseded = now;
    for (const r of this.registrations) {
      const handler = this.handlers?.get(r.kind);
      if (handler) markSuperseded(handler, now.has(r.kind));
    }
  }

  start(): void {
    this.ticker.start();
  }

  stop(): Promise<void> {
    return this.ticker.stop();
  }
}
