import { KindCatalog } from '@almanac/kinds';
import { KindsRepository } from '@almanac/persistence';
import { Clock, within } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import { API_SETTINGS, type ApiSettings } from '../api-settings';
import { unavailable } from '../http/api-error';
import type { KindLookup } from './kind-check';

/** A registry copy this old is read again before it answers (kinds change only as workers boot). */
const MAX_AGE_MS = 5000;
/** A kind the copy does not know makes it read again, at most this often (a worker just booted). */
const MISS_REFRESH_MS = 500;
/** The most a request waits for the registry; past it the last copy answers. */
const WAIT_MS = 1000;

/** The API's copy of the kind registry: what ingest and schedules accept, and each kind's payload schema. */
@Injectable()
export class KindsService {
  readonly catalog: KindCatalog;
  @InjectPinoLogger('kinds') private readonly log!: PinoLogger;

  constructor(
    repo: KindsRepository,
    private readonly clock: Clock,
    @Inject(API_SETTINGS) settings: ApiSettings,
  ) {
    this.catalog = new KindCatalog(repo, { maxAgeMs: MAX_AGE_MS, missRefreshMs: MISS_REFRESH_MS, restrict: settings.kinds });
  }

  /**
   * The registry, fresh enough to judge `bodies` (each a job or schedule body with a `kind`).
   * 503 (retry) rather than 400 while it cannot say: never read yet (the database is down as
   * the API starts), or empty (no worker has registered yet, as during a first rollout).
   */
  async lookup(bodies: readonly unknown[]): Promise<KindLookup> {
    const kinds = bodies.flatMap((b) => {
      const kind = (b as { kind?: unknown } | null)?.kind;
      return typeof kind === 'string' ? [kind] : [];
    });
    try {
      await within(WAIT_MS, this.catalog.ensure(kinds, this.clock.now().getTime()), 'kind registry');
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'kind registry not read; judging by the last copy');
    }
    if (!this.catalog.loaded) throw unavailable('the kind registry cannot be read right now; retry shortly');
    if (bodies.length > 0 && this.catalog.kinds().length === 0) throw unavailable('no worker has registered its kinds yet; retry shortly');
    return this.catalog;
  }
}
