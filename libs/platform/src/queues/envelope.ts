import { createHash } from 'node:crypto';
import {
  COARSE_WINDOW_MS, DELIVERY_LEAD_MS, ENVELOPE_MAX_ROWS, ENVELOPE_WINDOW_MS, FINE_HORIZON_MS, REFINE_LEAD_MS, SPARSE_ENVELOPE_ROWS,
  SPARSE_WINDOW_MS,
} from './delivery-timing';
import { compareIds, type Hint } from '@almanac/domain';

/**
 * What one envelope (one BullMQ job on the hot queue) carries: row references, never a payload,
 * already in the form of the pools' ready lists, so the dispatcher hands a flow over with one
 * split and no work per row (per-row decoding held its event loop ~400 ms when a 200,000-row
 * burst came due, and a quiet tenant's job due then waited behind it).
 */
export interface EnvelopeData {
  /** The earliest and the latest due time of its rows, epoch ms. */
  b: number;
  l: number;
  /** Its rows by flow: [tenant, kind, `<id>:<due ms>` comma-separated in due order] (~30 B a row). */
  f: [number, string, string][];
  /** A repair (the overdue sweep's): at hand-off, rows due before their flow's head go to its head. */
  x?: 1;
  /** A coarse window's job: its rows wait in the window's list (CoarseWindows), `f` is empty. */
  w?: number;
}

/** A tenant's rows of one kind, as ready-list items (`<id>:<due ms>`). */
export interface EnvelopeFlow {
  tenantId: number;
  kind: string;
  items: string[];
}

export interface EnvelopeOptions {
  /** The overdue sweep's re-hints (see EnvelopeData.x). */
  repair?: boolean;
  /**
   * Rows a dispatcher sends back (an envelope that came out before they were due): their
   * envelopes get ids of their own, since the one they came in is still active, and an add of
   * its id would be ignored.
   */
  resent?: boolean;
  /**
   * When, by the clock of its `now` (the host's, or a worker's database clock), the caller read it:
   * the envelopes' delays count from it (BullMQ's job timestamp), so a call sent again after a
   * refusal adds them due at the same time, not later.
   */
  addedAtMs?: number;
}

/** One BullMQ job to add: its id, data and how long it stays delayed. */
export interface Envelope {
  jobId: string;
  data: EnvelopeData;
  delayMs: number;
}

/**
 * Packs hints into envelopes, whatever their tenant and kind:
 * - due within DELIVERY_LEAD_MS (or already due): together, at once, whatever their due times;
 * - due within FINE_HORIZON_MS: in due order, per window from the first row's due time (see
 *   fineGroups), out DELIVERY_LEAD_MS before that first row is due;
 * - later: per COARSE_WINDOW_MS window, out REFINE_LEAD_MS before the window starts, when the
 *   dispatcher sends its rows on in fine envelopes.
 * At most ENVELOPE_MAX_ROWS rows each. The id is derived from the rows and their due times, so
 * adding the same hints again with the same `now` (a retry) adds nothing while the envelopes
 * wait, while a row moved to another time gets an envelope of its own.
 */
export function envelopesOf(hints: readonly Hint[], nowMs: number, opts: EnvelopeOptions = {}): Envelope[] {
  const due: Hint[] = [];
  const fine: Hint[] = [];
  const coarse = new Map<number, Hint[]>();
  for (const h of hints) {
    if (h.dueMs <= nowMs + DELIVERY_LEAD_MS) {
      due.push(h);
      continue;
    }
    const start = coarseWindowOf(h.dueMs, nowMs);
    if (start === null) fine.push(h);
    else if (coarse.has(start)) coarse.get(start)!.push(h);
    else coarse.set(start, [h]);
  }
  const out: Envelope[] = [];
  const add = (rows: Hint[], fireAtMs: number) => {
    const data = encode(rows, opts.repair === true);
    const jobId = `e-${rows[0].id}-${rows[rows.length - 1].id}-${digestOf(data)}-${data.b}${opts.resent ? `-r${nowMs}` : ''}`;
    out.push({ jobId, data, delayMs: Math.max(0, fireAtMs - nowMs) });
  };
  for (const rows of chunks(inDueOrder(due))) add(rows, nowMs);
  for (const rows of fineGroups(inDueOrder(fine))) add(rows, rows[0].dueMs - DELIVERY_LEAD_MS);
  for (const [start, group] of coarse) for (const rows of chunks(inDueOrder(group))) add(rows, start - REFINE_LEAD_MS);
  return out;
}

/**
 * Rows in due order cut into fine envelopes: an envelope takes the rows due within
 * ENVELOPE_WINDOW_MS of its first, and while it holds fewer than SPARSE_ENVELOPE_ROWS, those due
 * within SPARSE_WINDOW_MS, up to the next multiple of SPARSE_WINDOW_MS; at most ENVELOPE_MAX_ROWS.
 */
function fineGroups(rows: readonly Hint[]): Hint[][] {
  const out: Hint[][] = [];
  let group: Hint[] = [];
  for (const h of rows) {
    const span = group.length === 0 ? 0 : h.dueMs - group[0].dueMs;
    const cell = group.length > 0 && Math.floor(h.dueMs / SPARSE_WINDOW_MS) !== Math.floor(group[0].dueMs / SPARSE_WINDOW_MS);
    const full = cell || group.length >= ENVELOPE_MAX_ROWS || (span >= ENVELOPE_WINDOW_MS && group.length >= SPARSE_ENVELOPE_ROWS);
    if (full) {
      out.push(group);
      group = [];
    }
    group.push(h);
  }
  if (group.length > 0) out.push(group);
  return out;
}

/**
 * The rows an envelope carries, in 12 characters: an id of its first and last row and their count
 * alone let a re-hint of other rows between them (the overdue sweep's) share the id of an
 * envelope still waiting, and BullMQ ignored the add, so those rows waited for the next sweep.
 */
function digestOf(data: EnvelopeData): string {
  const hash = createHash('sha1');
  for (const [tenant, kind, items] of data.f) hash.update(`${tenant}|${kind}|${items};`);
  return hash.digest('base64url').slice(0, 12);
}

function chunks(rows: readonly Hint[]): Hint[][] {
  const out: Hint[][] = [];
  for (let i = 0; i < rows.length; i += ENVELOPE_MAX_ROWS) out.push(rows.slice(i, i + ENVELOPE_MAX_ROWS));
  return out;
}

function inDueOrder(rows: Hint[]): Hint[] {
  return rows.sort((a, c) => a.dueMs - c.dueMs || compareIds(a.id, c.id));
}

/** The start of the coarse window a row due at `dueMs` travels in, if it is due further ahead than FINE_HORIZON_MS; else null. */
export function coarseWindowOf(dueMs: number, nowMs: number): number | null {
  return dueMs > nowMs + FINE_HORIZON_MS ? Math.floor(dueMs / COARSE_WINDOW_MS) * COARSE_WINDOW_MS : null;
}

/** A coarse window's one BullMQ job: out REFINE_LEAD_MS before the window starts. */
export function windowEnvelope(start: number, nowMs: number): Envelope {
  return { jobId: `w-${start}`, data: { b: start, l: start + COARSE_WINDOW_MS - 1, f: [], w: start }, delayMs: Math.max(0, start - REFINE_LEAD_MS - nowMs) };
}

function encode(rows: readonly Hint[], repair: boolean): EnvelopeData {
  const flows = new Map<string, [number, string, string[]]>();
  for (const h of rows) {
    const key = `${h.tenantId}|${h.kind}`;
    let f = flows.get(key);
    if (!f) flows.set(key, (f = [h.tenantId, h.kind, []]));
    f[2].push(`${h.id}:${h.dueMs}`);
  }
  const f = [...flows.values()].map(([t, k, items]): [number, string, string] => [t, k, items.join(',')]);
  const data: EnvelopeData = { b: rows[0].dueMs, l: rows[rows.length - 1].dueMs, f };
  if (repair) data.x = 1;
  return data;
}

/** An envelope's flows, as ready-list items. */
export function flowsOf(data: EnvelopeData): EnvelopeFlow[] {
  return data.f.map(([tenantId, kind, items]) => ({ tenantId, kind, items: items.split(',') }));
}

/** The hints an envelope carries (flow by flow). */
export function hintsOf(data: EnvelopeData): Hint[] {
  return flowsOf(data).flatMap((f) =>
    f.items.map((item) => {
      const at = item.indexOf(':');
      return { id: item.slice(0, at), tenantId: f.tenantId, kind: f.kind, dueMs: Number(item.slice(at + 1)) };
    }),
  );
}
