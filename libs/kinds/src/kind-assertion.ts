import { KIND_ASSERT_EVERY_MS, type KindRegistration, type KindsRepository } from '@almanac/persistence';
import { Ticker } from '@almanac/platform';
import type { Logger } from 'pino';

/**
 * A worker's kinds in the registry: asserted before it takes work and every KIND_ASSERT_EVERY_MS
 * after, so the registry keeps the newest definition still asserted (REGISTER_KINDS_SQL).
 */
export class KindAssertion {
  private readonly ticker: Ticker;

  constructor(
    private readonly kinds: KindsRepository,
    readonly registrations: readonly KindRegistration[],
    private readonly workerId: string,
    private readonly logger: Logger,
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
    const moved = await this.kinds.register(this.registrations, this.workerId);
    for (const m of moved) this.logger.warn({ kind: m.kind, from: m.previousPool }, 'kind moved to another pool by this registration');
  }

  start(): void {
    this.ticker.start();
  }

  stop(): Promise<void> {
    return this.ticker.stop();
  }
}
