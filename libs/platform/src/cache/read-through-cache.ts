import { within } from '../time/within';

export interface ReadThroughCacheOptions<V> {
  /** An entry is read again once it is older than this; 0 keeps nothing. */
  ttlMs: number;
  /** The longest one caller waits for a read. Callers share a read in flight, each bounded on its own. */
  waitMs: number;
  /** While reads fail, an entry read at most this long ago still answers; past it the failure is thrown. */
  staleMs: number;
  /** Entries kept at once; the one read longest ago goes first. */
  maxEntries: number;
  /** Answers kept apart, at most `max` of them (unknown API keys), so a flood of them never evicts the rest. */
  negative?: { is: (value: V) => boolean; max: number };
  /** Milliseconds now (a test's clock). */
  now: () => number;
}

/** A read in flight this many waits long is taken for hung (a stopped database) and a new one starts. */
const HUNG_READ_WAITS = 10;

interface Entry<V> {
  value: V;
  readAt: number;
  /** Not read again before this: a TTL after the read, or after a failed read answered from the entry. */
  freshUntil: number;
}

/**
 * What Almanac remembers of Postgres on a hot path (API keys, a tenant's outbound rules): each
 * key read at most once per TTL, concurrent callers sharing one read, each caller waiting a
 * bounded time, and entries up to `staleMs` old answering while Postgres cannot. A key forgotten
 * (a revoked API key) is never answered from what was read before: a read in flight then is not
 * kept and its callers read again, and a caller whose read fails finds no entry to fall back on.
 */
export class ReadThroughCache<K, V> {
  /** [answers, negative answers]; a key is in one at most. Map order is read order, oldest first. */
  private readonly rooms: [Map<K, Entry<V>>, Map<K, Entry<V>>] = [new Map<K, Entry<V>>(), new Map<K, Entry<V>>()];
  private readonly reads = new Map<K, { p: Promise<V>; at: number }>();
  /** Reads in flight when their key was forgotten: their callers read again. */
  private readonly forgotten = new WeakSet<Promise<V>>();

  constructor(private readonly o: ReadThroughCacheOptions<V>) {}

  /**
   * The cached answer for `key`, else `read`'s, which is given the answer it replaces (expired), if
   * any. `what` names the read in a timeout's message.
   */
  async get(key: K, read: (previous: V | undefined) => Promise<V>, what: string): Promise<V> {
    const hit = this.entry(key);
    const now = this.o.now();
    if (hit && now < hit.freshUntil) return hit.value;
    try {
      // A read that has hung for HUNG_READ_WAITS waits is not joined for ever: a new one starts.
      const inFlight = this.reads.get(key);
      const p = inFlight && now - inFlight.at < this.o.waitMs * HUNG_READ_WAITS ? inFlight.p : this.load(key, () => read(hit?.value));
      const value = await within(this.o.waitMs, p, what);
      // Forgotten meanwhile (a key revoked): what this read found may predate that, so read again.
      return this.forgotten.has(p) ? await this.get(key, read, what) : value;
    } catch (err) {
      const stale = this.entry(key); // as it is now: forgotten meanwhile means no fallback
      const now = this.o.now();
      if (!stale || now - stale.readAt > this.o.staleMs) throw err;
      stale.freshUntil = now + this.o.ttlMs; // the callers behind this one do not each wait for a failing read
      return stale.value;
    }
  }

  /** Drops `key`, and keeps nothing a read in flight for it brings back. */
  forget(key: K): void {
    for (const room of this.rooms) room.delete(key);
    const inFlight = this.reads.get(key);
    if (inFlight) this.forgotten.add(inFlight.p);
    this.reads.delete(key);
  }

  /** Drops every entry whose answer `matches`, and keeps nothing any read in flight brings back (it may hold the old answer). */
  forgetWhere(matches: (value: V) => boolean): void {
    for (const room of this.rooms) for (const [key, e] of room) if (matches(e.value)) room.delete(key);
    for (const { p } of this.reads.values()) this.forgotten.add(p);
    this.reads.clear();
  }

  private entry(key: K): Entry<V> | undefined {
    return this.rooms[0].get(key) ?? this.rooms[1].get(key);
  }

  private load(key: K, read: () => Promise<V>): Promise<V> {
    const readAt = this.o.now();
    const p: Promise<V> = (async () => read())().then((value) => {
      if (this.reads.get(key)?.p === p) this.keep(key, value, readAt); // forgotten or replaced meanwhile: not kept
      return value;
    });
    const done = () => void (this.reads.get(key)?.p === p && this.reads.delete(key));
    p.then(done, done);
    this.reads.set(key, { p, at: readAt });
    return p;
  }

  private keep(key: K, value: V, readAt: number): void {
    for (const room of this.rooms) room.delete(key); // re-inserted last; a key found gone leaves the other room
    if (this.o.ttlMs <= 0) return;
    const negative = this.o.negative?.is(value) ?? false;
    const [room, max] = negative ? [this.rooms[1], this.o.negative!.max] : [this.rooms[0], this.o.maxEntries];
    if (room.size >= max) room.delete(room.keys().next().value as K);
    room.set(key, { value, readAt, freshUntil: readAt + this.o.ttlMs });
  }
}
