import type { BoundedCount } from '@almanac/persistence';

const UNITS: [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1000, 's'],
];

/** "in 5 min" / "3 h ago" from `now`: the one figure a person reads first next to a time. */
export function relativeTime(at: Date, now: Date): string {
  const ms = at.getTime() - now.getTime();
  const abs = Math.abs(ms);
  if (abs < 1000) return 'now';
  const [unit, label] = UNITS.find(([u]) => abs >= u) ?? UNITS[UNITS.length - 1];
  const n = Math.floor(abs / unit);
  return ms > 0 ? `in ${n} ${label}` : `${n} ${label} ago`;
}

/** 2026-12-02 10:15:03 UTC: sortable, unambiguous, second precision. */
export function utcTime(at: Date | string): string {
  const d = typeof at === 'string' ? new Date(at) : at;
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** A capped count reads "10,000+": the query stopped there. */
export function boundedCount(c: BoundedCount): string {
  return c.capped ? `${count(c.n)}+` : count(c.n);
}

export function durationMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** Pretty JSON for a <pre>; `null` shows as a dash. */
export function prettyJson(value: unknown): string {
  return value === null || value === undefined ? '—' : JSON.stringify(value, null, 2);
}
