import type { NewJob } from '../../libs/persistence/src';

/** Deterministic PRNG (mulberry32) so every run and variant sees the same rows. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
export const KEY_LENGTH = 20;
export const DAY_MS = 86400e3;

export type KeyMode = 'random' | 'monotonic';

export interface BenchRow {
  tenantId: number;
  job: NewJob;
}

/** Exactly `bytes` long once serialised as JSON (the figure the issue asks about). */
export function payloadOf(bytes: number, i: number): Record<string, unknown> {
  const base = { invoice: `inv_${String(i).padStart(10, '0')}`, amount: 1234 + (i % 1000), currency: 'EUR', note: '' };
  const pad = bytes - JSON.stringify(base).length;
  if (pad < 0) throw new RangeError(`payload of ${bytes} B is too small`);
  return { ...base, note: 'x'.repeat(pad) };
}

export interface DatasetOptions {
  rows: number;
  keys: KeyMode;
  tenants: number;
  payloadBytes: number;
  /** Run times are spread uniformly over this many days after `start`. */
  spreadDays: number;
  start: Date;
  seed: number;
}

/**
 * Future cold jobs: `random` keys are 20 characters from a 64-symbol alphabet (like a client's
 * uuid-ish ids); `monotonic` keys are `ord:` + a zero-padded counter (like `invoice:000123`).
 */
export function* dataset(o: DatasetOptions): Generator<BenchRow> {
  const rnd = prng(o.seed);
  const start = o.start.getTime();
  for (let i = 0; i < o.rows; i++) {
    let key: string;
    if (o.keys === 'random') {
      key = '';
      for (let c = 0; c < KEY_LENGTH; c++) key += ALPHABET[(rnd() * 64) | 0];
    } else {
      key = `ord:${String(i).padStart(KEY_LENGTH - 4, '0')}`;
    }
    yield {
      tenantId: 1 + (i % o.tenants),
      job: {
        kind: 'noop',
        key,
        runAt: new Date(start + Math.floor(rnd() * o.spreadDays * DAY_MS)),
        payload: payloadOf(o.payloadBytes, i),
        state: 'scheduled',
      },
    };
  }
}

/** Groups rows per tenant into batches of `size`, as the API's batcher would hand them over. */
export function batches(rows: Iterable<BenchRow>, size: number): { tenantId: number; jobs: NewJob[] }[] {
  const open = new Map<number, NewJob[]>();
  const out: { tenantId: number; jobs: NewJob[] }[] = [];
  for (const r of rows) {
    let b = open.get(r.tenantId);
    if (!b) open.set(r.tenantId, (b = []));
    b.push(r.job);
    if (b.length === size) {
      out.push({ tenantId: r.tenantId, jobs: b });
      open.delete(r.tenantId);
    }
  }
  for (const [tenantId, jobs] of open) out.push({ tenantId, jobs });
  return out;
}
