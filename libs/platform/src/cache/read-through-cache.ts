/** What a cache holds for a key: the value, and how long past its TTL it is (≤ 0 while fresh). */
export interface Cached<V> {
  value: V;
  expiredForMs: number;
}

export interface ReadThroughCacheOptions {
  /** A value is read again once it is this old. */
  ttlMs: number;
  /** Keys kept at most; the one read longest ago goes first. */
  maxEntries: number;
}

/**
 * Values read from a slower source (Postgres), each kept `ttlMs`, at most `maxEntries`.
 * Concurrent reads of one key share one. A key forgotten while a read of it is in flight is not
 * kept from that read: it may predate the change that made the caller forget it (a revoked key).
 * Callers decide what a failed read falls back to (`peek` keeps answering an expired value).
 */
export class ReadThroughCache<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();
  private readonly reads = new Map<K, Promise<V>>();
  /** Keys forgotten lately, with when: a read that started before then is not kept. */
  private readonly forgottenAt = new Map<K, number>();

  constructor(
    private readonly opts: ReadThroughCacheOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** The value held for `key`, fresh or expired, or undefined. */
  peek(key: K): Cached<V> | undefined {
    const e = this.entries.get(key);
    return e && { value: e.value, expiredForMs: this.now() - e.until };
  }

  /** The value held for `key` while fresh, or undefined. */
  fresh(key: K): V | undefined {
    const e = this.entries.get(key);
    return e && e.until > this.now() ? e.value : undefined;
  }

  /** The read of `key` in flight, if any. */
  reading(key: K): Promise<V> | undefined {
    return this.reads.get(key);
  }

  /**
   * Reads `key` with `read`, or joins the read in flight, and keeps the value (unless `keep`
   * says not to, or the key was forgotten meanwhile).
   */
  load(key: K, read: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    const running = this.reads.get(key);
    if (running) return running;
    const startedAt = this.now();
    const p = read()
      .then((value) => {
        if (keep(value) && (this.forgottenAt.get(key) ?? -Infinity) < startedAt) this.set(key, value, startedAt);
        return value;
      })
      .finally(() => {
        if (this.reads.get(key) === p) this.reads.delete(key);
      });
    this.reads.set(key, p);
    return p;
  }

  /** Keeps `value` for `key` for a TTL from `readAt` (default now), as the newest entry. */
  set(key: K, value: V, readAt = this.now()): void {
    if (this.opts.ttlMs <= 0) return;
    this.entries.delete(key); // re-inserted last: the Map's order is the eviction order
    if (this.entries.size >= this.opts.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, { value, until: readAt + this.opts.ttlMs });
  }

  /** Forgets `key`, and any read of it in flight will not be kept. */
  forget(key: K): void {
    this.entries.delete(key);
    this.reads.delete(key);
    const now = this.now();
    this.forgottenAt.set(key, now);
    // A read lasts at most a TTL past its start in any caller that bounds its waits; older marks can go.
    for (const [k, at] of this.forgottenAt) if (now - at > this.opts.ttlMs + 60_000) this.forgottenAt.delete(k);
  }

  /** Drops every entry whose value matches (it is read again next time). */
  dropWhere(matches: (value: V) => boolean): void {
    for (const [k, e] of this.entries) if (matches(e.value)) this.entries.delete(k);
  }
}
