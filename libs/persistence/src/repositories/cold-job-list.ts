import { COLUMNS } from '../statements/job-view-columns.sql';
import { NEXT_COLD_HOUR_SQL } from '../statements/next-cold-hour.sql';
import { isoMicros, type JobListFilter, type JobListPage, type ListPosition, rangeAfter, SCAN_CAP } from './job-list';
import { JobView, RawJob, Runner, toView } from './job-view';

const HOUR_MS = 3600_000;
/** Hour buckets probed per scheduled-list call before answering with a partial page. */
const MAX_BUCKET_PROBES = 24;
/** Hour buckets read per call in total (a bucket holds an hour of every tenant's cold rows). */
const MAX_HOURS_READ = 24 * 7;

function hourStart(d: Date): Date {
  return new Date(Math.floor(d.getTime() / HOUR_MS) * HOUR_MS);
}

/** Start of the hour containing a position string (UTC, microsecond text). */
function hourOfPosition(p: string): Date {
  return hourStart(new Date(p.slice(0, 23) + 'Z'));
}

/**
 * Scheduled rows by hour bucket: jump to the next non-empty bucket through jobs_cold_due,
 * read a span of buckets (tenant filtered, sorted), widen the span while pages come back
 * short. Bounded work per call: after MAX_BUCKET_PROBES jumps, MAX_HOURS_READ buckets or
 * SCAN_CAP rows read (whichever comes first) it answers with what it has and a cursor at the
 * first hour not read whole, so a sparse tenant pages forward instead of timing out. The index
 * orders a tenant's rows by hour only, so a page is taken from whole hours; an hour holding more
 * than the cap is read whole, first in its call (each page of it reads all of it again).
 */
export async function listScheduled(
  db: Runner,
  tenantId: number,
  f: JobListFilter,
  after: ListPosition | null,
  limit: number,
): Promise<JobListPage> {
  const start = [f.from ? hourStart(f.from) : null, after ? hourOfPosition(after.runAt) : null]
    .filter((d): d is Date => d !== null)
    .reduce<Date | null>((a, b) => (a && a > b ? a : b), null);
  let hour: Date | null = start;
  let span = 1;
  const items: JobView[] = [];
  let budget = MAX_HOURS_READ;
  let rowsLeft = SCAN_CAP;
  for (let probe = 0; probe < MAX_BUCKET_PROBES && budget > 0 && rowsLeft > 0; probe++) {
    const nextHour = await nextColdHour(db, tenantId, hour);
    if (!nextHour || (f.to && nextHour >= f.to)) return { items, next: null };
    span = Math.min(span, budget);
    budget -= span;
    let spanEnd = new Date(nextHour.getTime() + span * HOUR_MS);
    let part = await readColdBuckets(db, tenantId, f, after, nextHour, spanEnd, limit - items.length, rowsLeft);
    rowsLeft -= part.read;
    if (part.cut?.getTime() === nextHour.getTime()) {
      // Its first hour alone holds more rows than are left to read: read that hour whole, as
      // the first read of a call (nothing narrower than an hour is in jobs_cold_tenant).
      if (items.length > 0) return { items, next: { runAt: isoMicros(nextHour), id: '0' } };
      spanEnd = new Date(nextHour.getTime() + HOUR_MS);
      part = await readColdBuckets(db, tenantId, f, after, nextHour, spanEnd, limit, null);
      rowsLeft = 0;
    }
    items.push(...part.rows);
    const last = items[items.length - 1];
    if (items.length >= limit && last) return { items, next: { runAt: last.position, id: last.id } };
    hour = part.cut ?? spanEnd;
    if (part.cut) break;
    span *= 2;
  }
  // Everything before `hour` has been read; resume there, before its first row (job ids are
  // positive, and the API's cursor refuses a negative one).
  return { items, next: hour ? { runAt: isoMicros(hour), id: '0' } : null };
}

/** The tenant's first hour bucket holding a scheduled row, at or after `from`. */
async function nextColdHour(db: Runner, tenantId: number, from: Date | null): Promise<Date | null> {
  const rows: { h: string }[] = await db.query(NEXT_COLD_HOUR_SQL, [tenantId, from]);
  return rows[0] ? new Date(rows[0].h) : null;
}

/**
 * The first `limit` rows of the filter among the tenant's cold rows in the hours [from, to),
 * reading at most `cap` of them (all, when null) in hour order. Within an hour jobs_cold_tenant
 * holds no order, so a page comes from whole hours only: when the cap stops the read inside an
 * hour, `cut` is that hour, and the page holds only rows before it. Uncapped, a call read every
 * row of its spans, the keyset and kind being filters: a kind in 2 of 40 hours of 1,000 rows
 * read all 40,000 in one call (up to 168 hours a call); capped, 10,000 a call.
 */
async function readColdBuckets(
  db: Runner,
  tenantId: number,
  f: JobListFilter,
  after: ListPosition | null,
  from: Date,
  to: Date,
  limit: number,
  cap: number | null,
): Promise<{ rows: JobView[]; read: number; cut: Date | null }> {
  const params: unknown[] = [from, to, tenantId];
  const filters: string[] = [];
  if (f.kind) filters.push(`kind = $${params.push(f.kind)}`);
  filters.push(...rangeAfter(f, after, params));
  if (cap === null) {
    // Top-N sorted, not materialized: an hour of 200,000 rows in 170 ms, not 235.
    const all: RawJob[] = await db.query(
      `SELECT ${COLUMNS} FROM jobs
        WHERE ${COLD_SPAN}
          ${filters.map((w) => `AND ${w}`).join(' ')}
        ORDER BY jobs.run_at, jobs.id LIMIT $${params.push(limit)}`,
      params,
    );
    return { rows: all.map(toView), read: all.length, cut: null };
  }
  const capAt = params.push(cap);
  const rows: (RawJob & { cut: string | null; read: number })[] = await db.query(
    `WITH scan AS MATERIALIZED (
       SELECT jobs.id, jobs.run_at, jobs.kind FROM jobs
        WHERE ${COLD_SPAN}
        ORDER BY almanac_hour(jobs.run_at) LIMIT $${capAt}),
     edge AS (SELECT count(*)::int AS read, CASE WHEN count(*) >= $${capAt} THEN max(almanac_hour(run_at)) END AS h FROM scan),
     page AS (
       SELECT scan.id FROM scan, edge WHERE (edge.h IS NULL OR almanac_hour(scan.run_at) < edge.h)${filters.map((w) => ` AND ${w}`).join('')}
        ORDER BY scan.run_at, scan.id LIMIT $${params.push(limit)})
     SELECT edge.read, to_char(edge.h, 'YYYY-MM-DD"T"HH24:00:00"Z"') AS cut, j.*
       FROM edge LEFT JOIN LATERAL (SELECT ${COLUMNS}, jobs.id AS seq FROM jobs WHERE jobs.id IN (SELECT id FROM page)) j ON true
      ORDER BY j.run_at, j.seq`,
    params,
  );
  const cut = rows[0]?.cut;
  return { rows: rows.filter((r) => r.id !== null).map(toView), read: rows[0]?.read ?? 0, cut: cut ? new Date(cut) : null };
}

/** A tenant's cold rows in the hour buckets [$1, $2) ($3 the tenant), through jobs_cold_tenant. */
const COLD_SPAN = `state = 's' AND tenant_id = $3
            AND almanac_hour(run_at) >= almanac_hour($1::timestamptz) AND almanac_hour(run_at) < almanac_hour($2::timestamptz)`;
