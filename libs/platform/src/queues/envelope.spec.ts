import type { Hint } from '@almanac/domain';
import { COARSE_WINDOW_MS, DELIVERY_LEAD_MS, ENVELOPE_MAX_ROWS, ENVELOPE_WINDOW_MS, REFINE_LEAD_MS, SPARSE_ENVELOPE_ROWS, SPARSE_WINDOW_MS } from './delivery-timing';
import { envelopesOf, hintsOf } from './envelope';

describe('envelopes: rows that travel the hot queue together', () => {
  const now = Date.parse('2026-12-04T09:00:00.000Z');
  const hint = (id: number, dueMs: number, tenantId = 1, kind = 'noop'): Hint => ({ id: String(id), tenantId, kind, dueMs });

  it('puts rows due in the same window in one envelope whatever their tenant and kind, out a delivery lead before the first', () => {
    const base = now + 10_000;
    const rows = [hint(3, base + 4, 2, 'http'), hint(1, base, 1, 'noop'), hint(2, base + 9, 3, 'noop'), hint(4, base + SPARSE_WINDOW_MS, 1)];
    const out = envelopesOf(rows, now);
    expect(out).toHaveLength(2);
    expect(hintsOf(out[0].data)).toEqual([rows[1], rows[0], rows[2]]); // in due order
    expect([out[0].data.b, out[0].data.l]).toEqual([base, base + 9]);
    expect(out[0].delayMs).toBe(base - DELIVERY_LEAD_MS - now);
    expect(out[0].data.f.map(([t, k]) => `${t}:${k}`)).toEqual(['1:noop', '2:http', '3:noop']); // by flow, ready to hand over
    expect(hintsOf(out[1].data)).toEqual([rows[3]]);
    expect(out[1].delayMs).toBe(base + SPARSE_WINDOW_MS - DELIVERY_LEAD_MS - now);
  });

  it('keeps a sparse envelope open up to SPARSE_WINDOW_MS or SPARSE_ENVELOPE_ROWS rows; dense rows share ENVELOPE_WINDOW_MS', () => {
    const base = now + 10_000;
    const sizes = (everyMs: number, n: number) => envelopesOf(Array.from({ length: n }, (_, i) => hint(i + 1, base + Math.floor(i * everyMs))), now).map((e) => hintsOf(e.data).length);
    // 200 jobs/s: the 10 rows of each SPARSE_WINDOW_MS span (base is a multiple of it).
    expect(base % SPARSE_WINDOW_MS).toBe(0);
    expect(sizes(5, 100)).toEqual(Array(10).fill(10));
    // 1,000 jobs/s: 10 rows in ENVELOPE_WINDOW_MS, so the envelope fills to SPARSE_ENVELOPE_ROWS.
    expect(sizes(1, 100)).toEqual(Array(4).fill(SPARSE_ENVELOPE_ROWS));
    // 12,000 jobs/s: 120 rows in ENVELOPE_WINDOW_MS, a window each.
    expect(sizes(1 / 12, 1200)).toEqual(Array(10).fill(12 * ENVELOPE_WINDOW_MS));
    expect(SPARSE_ENVELOPE_ROWS).toBeLessThan(12 * ENVELOPE_WINDOW_MS);
  });

  it('sends rows already due together at once, whatever their due times', () => {
    const rows = [hint(1, now - 60_000), hint(2, now - 5), hint(3, now + DELIVERY_LEAD_MS)];
    const [only, ...rest] = envelopesOf(rows, now);
    expect(rest).toEqual([]);
    expect(only.delayMs).toBe(0);
    expect(hintsOf(only.data).map((h) => h.id)).toEqual(['1', '2', '3']);
  });

  it("packs far rows by the minute, out early enough to be refined into fine envelopes before the minute starts", () => {
    const minute = Math.floor((now + 3_600_000) / COARSE_WINDOW_MS) * COARSE_WINDOW_MS;
    const out = envelopesOf([hint(1, minute + 5), hint(2, minute + 59_000)], now);
    expect(out).toHaveLength(1);
    expect(out[0].delayMs).toBe(minute - REFINE_LEAD_MS - now);
  });

  it('cuts sparse envelopes at multiples of SPARSE_WINDOW_MS, so an add sent again with a later `now` keeps the ids past the first such span', () => {
    const base = now + 10_000;
    const rows = Array.from({ length: 40 }, (_, i) => hint(i + 1, base + 3 + 5 * i)).reverse(); // any order
    const ids = (at: number) => envelopesOf(rows, at).map((e) => e.jobId);
    const later = ids(base + 3 - DELIVERY_LEAD_MS); // the first row is due now: it leaves its envelope
    expect(later.slice(2)).toEqual(ids(now).slice(1));
  });

  it('gives rows between the same first and last rows an envelope of their own (an overdue re-hint beside a waiting envelope)', () => {
    const due = now + 10_000;
    const waiting = envelopesOf([hint(1, due), hint(2, due + 1), hint(9, due + 3)], now);
    const rehint = envelopesOf([hint(1, due), hint(5, due + 2), hint(9, due + 3)], now);
    expect(rehint[0].jobId).not.toBe(waiting[0].jobId);
    expect(envelopesOf([hint(9, due + 3), hint(5, due + 2), hint(1, due)], now)[0].jobId).toBe(rehint[0].jobId); // same rows, same id
  });

  it('caps an envelope at ENVELOPE_MAX_ROWS rows; the same hints give the same ids, a row moved to another time another id', () => {
    const burst = Array.from({ length: ENVELOPE_MAX_ROWS + 1 }, (_, i) => hint(100 + i, now + 30_000));
    const a = envelopesOf(burst, now);
    expect(a.map((e) => hintsOf(e.data).length)).toEqual([ENVELOPE_MAX_ROWS, 1]);
    expect(envelopesOf(burst, now).map((e) => e.jobId)).toEqual(a.map((e) => e.jobId));
    expect(envelopesOf([hint(7, now + 30_000)], now)[0].jobId).not.toBe(envelopesOf([hint(7, now + 40_000)], now)[0].jobId);
    expect(a[0].jobId).not.toMatch(/:/); // BullMQ refuses ':' in custom ids
    // Rows a dispatcher sends back get new ids: the envelope they came in is still active.
    expect(envelopesOf(burst, now, { resent: true }).map((e) => e.jobId)).not.toEqual(a.map((e) => e.jobId));
  });

  it('marks a repair, and costs about 30 bytes a row', () => {
    const rows = Array.from({ length: 1000 }, (_, i) => hint(1_764_000_000_000_000 + i, now - i, 12, 'noop'));
    const [e] = envelopesOf(rows, now, { repair: true });
    expect(e.data.x).toBe(1);
    expect(JSON.stringify(e.data).length / rows.length).toBeLessThan(32);
  });
});
