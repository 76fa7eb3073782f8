/**
 * The look-ahead windows of `almanac_jobs_due{pool, within}`: how much work comes due within
 * each, per pool, so capacity can be asked for before it is needed (issue 19). The longest one
 * bounds what the promoter reads. A worker ScaledObject reads two of them, its lead time and
 * lead plus window (5m and 10m by default; k8s/worker/scaling-query.js).
 */
export const DUE_WINDOWS = [
  { label: '1m', minutes: 1 },
  { label: '5m', minutes: 5 },
  { label: '10m', minutes: 10 },
  { label: '15m', minutes: 15 },
  { label: '1h', minutes: 60 },
] as const;

export type DueWindowLabel = (typeof DUE_WINDOWS)[number]['label'];

export const LONGEST_DUE_WINDOW_MS = DUE_WINDOWS[DUE_WINDOWS.length - 1].minutes * 60_000;

/** Jobs of one pool due in one minute from now: minute 0 is [now, now + 1 min). */
export interface DueMinute {
  pool: string;
  minute: number;
  n: number;
}

/** Per pool, the jobs due within each window (cumulative: within 5m includes within 1m). */
export function dueByWindow(minutes: readonly DueMinute[]): Map<string, Record<DueWindowLabel, number>> {
  const out = new Map<string, Record<DueWindowLabel, number>>();
  for (const m of minutes) {
    let row = out.get(m.pool);
    if (!row) {
      row = Object.fromEntries(DUE_WINDOWS.map((w) => [w.label, 0])) as Record<DueWindowLabel, number>;
      out.set(m.pool, row);
    }
    for (const w of DUE_WINDOWS) if (m.minute >= 0 && m.minute < w.minutes) row[w.label] += m.n;
  }
  return out;
}
