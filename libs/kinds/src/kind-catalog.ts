import type { KindRegistration } from '@almanac/persistence';
import { type PayloadProblem, PayloadSchemas } from './payload-schema';

/** Where the catalog reads the registry from (KindsRepository). */
export interface KindSource {
  list(): Promise<KindRegistration[]>;
}

export interface CatalogKind {
  kind: string;
  pool: string;
  timeoutMs: number;
  /** JSON Schema, as registered; null when the kind takes any payload. */
  payloadSchema: Record<string, unknown> | null;
}

/** Unknown kinds whose last miss is remembered (a client sending random kinds cannot grow it). */
const MAX_MISSES = 1000;

/**
 * A replica's copy of the kind registry (table job_kinds), re-read when older than `maxAgeMs`
 * and whenever it is asked about a kind it does not know (at most every `missRefreshMs` per
 * kind, and one read at a time), so a kind a worker has just registered is accepted at once.
 * If a read fails the last copy stays.
 * `restrict` (ALMANAC_KINDS) narrows the registered kinds to those listed.
 */
export class KindCatalog {
  private byKind = new Map<string, CatalogKind>();
  private loadedAt = -Infinity;
  private everLoaded = false;
  private readonly misses = new Map<string, number>();
  private loading: Promise<void> | undefined;

  constructor(
    private readonly source: KindSource,
    private readonly opts: { maxAgeMs: number; missRefreshMs: number; restrict?: ReadonlySet<string> },
    private readonly schemas = new PayloadSchemas(),
  ) {}

  /** Reads the registry now (one query at a time; concurrent callers share it). */
  refresh(nowMs: number): Promise<void> {
    this.loading ??= this.source
      .list()
      .then((kinds) => {
        const allowed = kinds.filter((k) => !this.opts.restrict || this.opts.restrict.has(k.kind));
        this.byKind = new Map(allowed.map((k) => [k.kind, { ...k }]));
        this.loadedAt = nowMs;
        this.everLoaded = true;
      })
      .finally(() => (this.loading = undefined));
    return this.loading;
  }

  /** Makes sure the copy is fresh enough to answer for `kinds`: re-reads if stale or if one is unknown. */
  async ensure(kinds: Iterable<string>, nowMs: number): Promise<void> {
    if (nowMs - this.loadedAt >= this.opts.maxAgeMs) return this.refresh(nowMs);
    for (const kind of kinds) {
      if (this.byKind.has(kind) || (this.opts.restrict && !this.opts.restrict.has(kind))) continue;
      if (nowMs - (this.misses.get(kind) ?? -Infinity) < this.opts.missRefreshMs) continue;
      if (this.misses.size >= MAX_MISSES) this.misses.clear();
      this.misses.set(kind, nowMs);
      // A read already in flight may have started before the kind was registered: join it, and
      // read once more if it did not know the kind either.
      if (this.loading) await this.loading.catch(() => undefined);
      if (!this.byKind.has(kind)) await this.refresh(nowMs);
      return;
    }
  }

  /** When the copy was last read (-Infinity: never): what is derived from it is good until it changes. */
  get readAt(): number {
    return this.loadedAt;
  }

  /** False until a read has succeeded: until then no answer about a kind is known to be right. */
  get loaded(): boolean {
    return this.everLoaded;
  }

  get(kind: string): CatalogKind | undefined {
    return this.byKind.get(kind);
  }

  /** The registered kinds, sorted. */
  kinds(): string[] {
    return [...this.byKind.keys()].sort();
  }

  all(): CatalogKind[] {
    return this.kinds().map((k) => this.byKind.get(k) as CatalogKind);
  }

  /** What is wrong with `payload` for `kind` (empty: nothing, or the kind has no schema or is unknown). */
  checkPayload(kind: string, payload: unknown): PayloadProblem[] {
    const schema = this.byKind.get(kind)?.payloadSchema;
    return schema ? this.schemas.check(schema)(payload) : [];
  }
}
