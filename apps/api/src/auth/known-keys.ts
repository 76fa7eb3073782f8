/** A page of keys above an id, live ones and revoked settled ones (TenantKeysRepository.keyHashesAfter). */
export type ReadKeyHashes = (afterId: number, limit: number, settleMs: number) => Promise<{ id: number; hash: string; live: boolean; settled: boolean }[]>;

/** Keys read per query: the start-up read of 100,000 keys is ten of them. */
const PAGE = 10_000;
/**
 * A key row inserted this long ago (by the database's clock) is past every insert that took a
 * lower id: each is one statement, bounded by ALMANAC_PG_STATEMENT_TIMEOUT_MS (30 s by default),
 * so none commits later. Reads look again at the keys inserted within it.
 */
export const SETTLE_MS = 5 * 60_000;
/** Reads start at least this far apart: a flood of unknown keys costs at most 20 small queries a second per replica. */
export const READ_GAP_MS = 50;
/**
 * A read at least this long after the last full one reads every key again: it drops keys revoked
 * whose news was lost, and finds a key whose insert committed past SETTLE_MS after taking its id
 * (a statement timeout set higher, or none), within a minute of its first use.
 */
export const FULL_READ_EVERY_MS = 60_000;

/**
 * The hashes of the live API keys (sha256, base64), read from the database: a key not among them
 * is refused without a lookup, so a flood of random keys costs no query of its own and spends no
 * budget a real key needs. A key created since (on any replica) is found by the next read, which
 * reads only the keys above the highest id read and settled; requests with an unknown key share
 * it. Revoked keys leave at once on forget(), else at the next full read (a revoked key still
 * here is looked up, and refused, as before).
 */
export class KnownKeys {
  private hashes = new Set<string>();
  /** Every live key with id up to this is in `hashes`. */
  private floor = 0;
  private lastRead: Promise<void> = Promise.resolve();
  private nextRead: Promise<void> | undefined;
  private lastStartMs = -Infinity;
  private lastFullMs = -Infinity;

  constructor(
    private readonly read: ReadKeyHashes,
    /** A monotonic clock (ms): a wall clock stepped back would hold every read for as long. */
    private readonly nowMs: () => number,
  ) {}

  has(hash: string): boolean {
    return this.hashes.has(hash);
  }

  forget(hash: string): void {
    this.hashes.delete(hash);
  }

  /**
   * Resolves once a read that started after this call is done: a key committed before the call is
   * then known. Callers meanwhile share that read; it waits for the one in flight and READ_GAP_MS.
   */
  catchUp(): Promise<void> {
    this.nextRead ??= this.lastRead
      .catch(() => undefined)
      .then(() => pause(this.lastStartMs + READ_GAP_MS - this.nowMs()))
      .then(() => {
        this.nextRead = undefined;
        this.lastStartMs = this.nowMs();
        return (this.lastRead = this.readSince());
      });
    return this.nextRead;
  }

  private async readSince(): Promise<void> {
    const full = this.lastStartMs - this.lastFullMs >= FULL_READ_EVERY_MS;
    if (full) this.lastFullMs = this.lastStartMs; // failed, it is not tried again at once: reads go on from the floor
    const into = full ? new Set<string>() : this.hashes;
    let floor = full ? 0 : this.floor;
    let settled = true; // the floor moves over settled keys only, and only up to the first unsettled one
    for (let after = floor; ; ) {
      const rows = await this.read(after, PAGE, SETTLE_MS);
      for (const r of rows) {
        if (r.live) into.add(r.hash); // a revoked one only moves the floor past it
        settled &&= r.settled;
        if (settled) floor = r.id;
      }
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1].id;
    }
    if (full) this.hashes = into;
    this.floor = floor;
  }
}

function pause(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
