import type { Hint } from '@almanac/domain';
import { luaScript, runScript } from '../redis/lua-script';
import type { RedisClient } from '../redis/redis';
import { within } from '../time/within';
import { COARSE_WINDOW_MS, retryHandOff, WINDOW_PART_ROWS } from './delivery-timing';
import { coarseWindowOf } from './envelope';

/**
 * A window's list and its marker outlive the window by this much: long enough that no producer
 * with a sane clock still adds to it, after which rows left behind (an add whose window job never
 * landed) are the overdue sweep's to re-hint.
 */
const KEEP_AFTER_WINDOW_MS = 3_600_000;

/**
 * Adds a window's items unless a dispatcher has opened it: 0 when it was open, 2 when its job is
 * known to be added (nothing more to do), 1 when the caller must add the job (then jobAdded()).
 */
const ADD = luaScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
for i = 2, #ARGV, 1000 do redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV))) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
return 1`);

/**
 * Items a call reads of a window's list. Opening reads it in pages: `LRANGE 0 -1` of 200,000
 * one-row items in one script held Redis for 208–500 ms, and every other client with it; a page
 * of 2,000 takes about a millisecond (coarse-windows.spec.ts).
 */
const PAGE = 2000;

/** Rows an item holds at most, so that a page is a bounded reply (~2 KB an item) whatever the adds. */
const ROWS_PER_ITEM = 100;

/** Marks a window open (later adds are refused) and returns its first page; the list stays until cleared. */
const OPEN = `
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return redis.call('LRANGE', KEYS[1], 0, ${PAGE - 1})`;

/**
 * Rows due further ahead than FINE_HORIZON_MS wait in one Redis list per COARSE_WINDOW_MS window,
 * shared by every producer, under one BullMQ job per window (`w-<start>`, see HotQueue). A job per
 * enqueue call cost ~1 KB of Redis per hot row when the API queued rows a few per request (10 M
 * jobs over a year: 1,022 B per hot row, bench/hold.ts 2026-12-04); an item costs ~40 B.
 *
 * An item is one flow of one add (up to 100 rows), `<tenant>|<kind>|<id>:<due - start>,…`. Keys carry the hot
 * queue's prefix, hash-tagged on a cluster, so a window's two keys share the queue's slot.
 * The dispatcher opens a window when its job comes due and sends its rows on in parts (drain):
 * the marker makes a late add (a producer whose clock runs behind) fall back to an envelope of its
 * own, so no item lands in a list that is no longer read; the list is cleared once every part is
 * handed on, so a dispatcher that dies meanwhile leaves it for the job's retry.
 */
export class CoarseWindows {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    /** Every wait is bounded by this (the queue's connection has no command timeout). */
    private readonly waitMs: number,
    /** Resolves once the connection first came up: before, with no offline queue, a command would fail. */
    private readonly connected: () => Promise<unknown> = async () => undefined,
  ) {}

  /**
   * Adds hints due beyond the fine horizon to their windows in one round trip; returns the windows
   * whose job the caller must still add (then jobAdded), and the hints it did not take (due
   * sooner, or their window is open). A window whose job a producer already added needs nothing
   * more: an add of a row into it is one round trip, not two (a single POST's enqueue measured
   * +60 µs of API CPU and +1–2 ms p99 with the second, bench/ingest.ts --only single).
   */
  async add(hints: readonly Hint[], nowMs: number): Promise<{ windows: number[]; rest: Hint[] }> {
    const byWindow = new Map<number, Hint[]>();
    const rest: Hint[] = [];
    for (const h of hints) {
      const start = coarseWindowOf(h.dueMs, nowMs);
      if (start === null) {
        rest.push(h);
        continue;
      }
      const list = byWindow.get(start);
      if (list) list.push(h);
      else byWindow.set(start, [h]);
    }
    if (byWindow.size === 0) return { windows: [], rest };
    const replies = await this.runAdds(byWindow, nowMs);
    const windows: number[] = [];
    [...byWindow].forEach(([start, rows], i) => {
      if (replies[i] === 1) windows.push(start);
      else if (replies[i] === 0) rest.push(...rows);
    });
    return { windows, rest };
  }

  /**
   * ADD's reply for each window, in order. One window (a single POST's row) goes without a
   * pipeline, whose making copies each of BullMQ's scripts onto it, and by the script's SHA: the
   * two were the largest part of what took API CPU per POST from ~890 to ~690 µs (bench/README.md).
   */
  private async runAdds(byWindow: Map<number, Hint[]>, nowMs: number): Promise<unknown[]> {
    const client = await this.client();
    const args = ([start, rows]: [number, Hint[]]) => [...this.keys(start), keepMs(start, nowMs), ...encode(rows, start)];
    if (byWindow.size === 1) return [await within(this.waitMs, runScript(client, ADD, 3, args([...byWindow][0])), 'hot queue windows')];
    const pipeline = client.pipeline();
    for (const window of byWindow) pipeline.eval(ADD.lua, 3, ...args(window));
    const replies = (await within(this.waitMs, pipeline.exec(), 'hot queue windows')) ?? [];
    return [...byWindow].map((_, i) => {
      const [err, added] = replies[i] ?? [new Error('no reply')];
      if (err) throw err;
      return added;
    });
  }

  /** Notes that the windows' jobs are added: later adds to them skip the job (one round trip). */
  async jobAdded(starts: readonly number[], nowMs: number): Promise<void> {
    if (starts.length === 0) return;
    const pipeline = (await this.client()).pipeline();
    for (const start of starts) pipeline.set(this.keys(start)[2], '1', 'PX', keepMs(start, nowMs));
    await within(this.waitMs, pipeline.exec(), 'hot queue windows');
  }

  /**
   * Opens a window (later adds are refused) and yields its hints in parts of WINDOW_PART_ROWS
   * (and the rest of an item), reading on only once the caller asks for the next; after the last,
   * clears it. A caller that stops early leaves the window whole: a dispatcher that died, for the
   * job's retry (stalled), which yields every part again, the same; a hand-off that failed, for
   * the overdue sweep, which re-hints its rows from Postgres (the job is not retried). Once the marker is
   * set no add reaches the list, so pages read by index see it whole and in one order. Each read
   * Redis refuses is sent again (retryHandOff: all of them are safe to repeat).
   */
  async *drain(start: number, nowMs: number): AsyncGenerator<Hint[], void, undefined> {
    let part: Hint[] = [];
    for await (const page of this.pages(start, nowMs)) {
      for (const item of page) {
        for (const hint of decode(item, start)) part.push(hint);
        if (part.length < WINDOW_PART_ROWS) continue;
        yield part;
        part = [];
      }
    }
    if (part.length > 0) yield part;
    await retryHandOff(() => this.clear(start));
  }

  /** A window's hints, leaving it as it is (tests and tools). */
  async peek(start: number): Promise<Hint[]> {
    const hints: Hint[] = [];
    for await (const page of this.pages(start)) for (const item of page) for (const hint of decode(item, start)) hints.push(hint);
    return hints;
  }

  /** Drops an opened window's items, once they are handed on (UNLINK: Redis frees a long list off its main thread). */
  async clear(start: number): Promise<void> {
    await within(this.waitMs, (await this.client()).unlink(this.keys(start)[0]), 'hot queue window clear');
  }

  /** The window's items, page after page until a short one; opened by the first read when `openAtMs` is given. */
  private async *pages(start: number, openAtMs?: number): AsyncGenerator<string[], void, undefined> {
    for (let from = 0; ; from += PAGE) {
      const page = openAtMs === undefined ? await this.read(start, from) : await retryHandOff(() => this.read(start, from, openAtMs));
      yield page;
      if (page.length < PAGE) return;
    }
  }

  /** A page of the window's items from `from`; the first one with OPEN when `openAtMs` is given. */
  private async read(start: number, from: number, openAtMs?: number): Promise<string[]> {
    const [list, open] = this.keys(start);
    const client = await this.client();
    const page = from === 0 && openAtMs !== undefined ? client.eval(OPEN, 2, list, open, keepMs(start, openAtMs)) : client.lrange(list, from, from + PAGE - 1);
    return (await within(this.waitMs, page, 'hot queue window read')) as string[];
  }

  private async client(): Promise<RedisClient> {
    await within(this.waitMs, this.connected(), 'hot queue connect');
    return this.redis;
  }

  /** The window's list, its open marker, and its job-added flag (one slot on a cluster: the prefix's tag). */
  private keys(start: number): [string, string, string] {
    const list = `${this.prefix}:hot:w:${start}`;
    return [list, `${list}:open`, `${list}:job`];
  }
}

/** How long a window's keys stay, by the caller's clock (Redis's may differ). */
function keepMs(start: number, nowMs: number): number {
  return Math.max(1, start + COARSE_WINDOW_MS + KEEP_AFTER_WINDOW_MS - nowMs);
}

function encode(rows: readonly Hint[], start: number): string[] {
  const flows = new Map<string, string[]>();
  for (const h of rows) {
    const key = `${h.tenantId}|${h.kind}`;
    const items = flows.get(key);
    if (items) items.push(`${h.id}:${h.dueMs - start}`);
    else flows.set(key, [`${h.id}:${h.dueMs - start}`]);
  }
  const out: string[] = [];
  for (const [key, items] of flows) for (let i = 0; i < items.length; i += ROWS_PER_ITEM) out.push(`${key}|${items.slice(i, i + ROWS_PER_ITEM).join(',')}`);
  return out;
}

function decode(item: string, start: number): Hint[] {
  const [tenant, kind, rows] = item.split('|');
  return rows.split(',').map((row) => {
    const at = row.indexOf(':');
    return { id: row.slice(0, at), tenantId: Number(tenant), kind, dueMs: start + Number(row.slice(at + 1)) };
  });
}
