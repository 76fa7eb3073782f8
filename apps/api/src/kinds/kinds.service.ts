import { KindCatalog } from '@almanac/kinds';
import { type KindRegistration, KindsRepository } from '@almanac/persistence';
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
  /** How many kinds the last read found before ALMANAC_KINDS narrowed them. */
  private registered = 0;
  private readonly unmatchedLogged = new Set<string>();

  constructor(
    repo: KindsRepository,
    private readonly clock: Clock,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
  ) {
    const source = { list: () => repo.list().then((kinds) => this.noteRegistered(kinds)) };
    this.catalog = new KindCatalog(source, { maxAgeMs: MAX_AGE_MS, missRefreshMs: MISS_REFRESH_MS, restrict: settings.kinds });
  }

  /** A typo in ALMANAC_KINDS admits nothing, silently: each entry naming no registered kind is logged once. */
  private noteRegistered(kinds: KindRegistration[]): KindRegistration[] {
    this.registered = kinds.length;
    const names = new Set(kinds.map((k) => k.kind));
    for (const entry of this.settings.kinds ?? []) {
      if (names.has(entry) || this.unmatchedLogged.has(entry)) continue;
      this.unmatchedLogged.add(entry);
      this.log.warn({ entry, registered: [...names].sort() }, `ALMANAC_KINDS names "${entry}", which no worker has registered`);
    }
    return kinds;
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
    if (bodies.length > 0 && this.catalog.kinds().length === 0) {
      throw unavailable(this.registered > 0 ? `ALMANAC_KINDS admits none of the ${this.registered} registered kinds` : 'no worker has registered its kinds yet; retry shortly');
    }
    return this.catalog;
  }
}
