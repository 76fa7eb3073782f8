import { Injectable } from '@nestjs/common';
import type { JobState } from '@almanac/domain';
import { DataSource } from 'typeorm';
import { STATE_CODE } from '../job-state.codec';
import { onConnection } from '../sql';
import { FIND_JOB_BY_KEY_SQL } from '../statements/find-job-by-key.sql';
import { COLUMNS } from '../statements/job-view-columns.sql';
import { NEXT_COLD_HOUR_SQL } from '../statements/next-cold-hour.sql';
import { findViewForTenant, inSnapshot, JobView, RawJob, Runner, toView } from './job-view';

export type { JobView } from './job-view';

/** A keyset position: `(run_at, id)`; the next page holds rows strictly after it. */
export interface ListPosition {
  runAt: string;
  id: string;
}

export interface JobListFilter {
  state?: JobState;
  kind?: string;
  /** inclusive lower bound on run_at */
  from?: Date;
  /** exclusive upper bound on run_at */
  to?: Date;
}

export interface JobListPage {
  items: JobView[];
  next: ListPosition | null;
}

/** Orders two keyset positions the way `ORDER BY run_at, id` does. */
export function comparePositions(a: ListPosition, b: ListPosition): number {
  if (a.runAt !== b.runAt) return a.runAt < b.runAt ? -1 : 1;
  const x = BigInt(a.id);
  const y = BigInt(b.id);
  return x === y ? 0 : x < y ? -1 : 1;
}

const HOUR_MS = 3600_000;
/** Index rows a filtered non-scheduled list examines per call before answering a short page. */
const SCAN_CAP = 10_000;
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

function isoMicros(d: Date): string {
  return d.toISOString().replace('Z', '000Z');
}

/**
 * Tenant-scoped reads on jobs (API-driven state changes live in JobChangesRepository). Listing is
 * keyset-paginated by `(run_at, id)` and always rides an index that starts with the tenant, so
 * a tenant's listing costs the same whatever other tenants store: non-scheduled rows through
 * `jobs_tenant_list` (tenant_id, run_at, id) WHERE state <> 's'; scheduled (cold) rows through
 * `jobs_cold_tenant` (tenant_id, almanac_hour(run_at)), one run of hour buckets at a time (the
 * bucket, not the run time, is in that index: deduplicated, it costs a few bytes per job). An
 * unfiltered list merges the two sources.
 */
@Injectable()
export class JobQueriesRepository {
  constructor(private readonly db: DataSource) {}

  /** `over`: the caller stopped waiting (onConnection). */
  async findForTenant(tenantId: number, id: string, over?: AbortSignal): Promise<JobView | null> {
    return onConnection(this.db, over, (c) => findViewForTenant(c, tenantId, id));
  }

  async findByKeyForTenant(tenantId: number, key: string, over?: AbortSignal): Promise<JobView | null> {
    const rows = await onConnection(this.db, over, (c): Promise<RawJob[]> => c.query(FIND_JOB_BY_KEY_SQL, [tenantId, key]));
    return rows[0] ? toView(rows[0]) : null;
  }

  // The list statements are built from the filter and cursor, so they stay here, not in statements/.
  async list(tenantId: number, filter: JobListFilter, after: ListPosition | null, limit: number, over?: AbortSignal): Promise<JobListPage> {
    return onConnection(this.db, over, (c) => {
      if (filter.state === 'scheduled') return this.listScheduled(c, tenantId, filter, after, limit);
      if (filter.state) return this.listNonScheduled(c, tenantId, filter, after, limit);
      // Both halves in one snapshot: read apart, a row turning from scheduled to queued between
      // them was listed twice or not at all.
      return inSnapshot(c, async (tx) => {
        const hot = await this.listNonScheduled(tx, tenantId, filter, after, limit);
        return mergePages(hot, await this.listScheduled(tx, tenantId, filter, after, limit), limit);
      });
    });
  }

  /** EXPLAIN of every statement a list call would run (tests assert index use). */
  async explainList(tenantId: number, filter: JobListFilter, after: ListPosition | null, limit: number): Promise<string[]> {
    const plans: string[] = [];
    const explaining: Runner = {
      query: async (sql: string, params?: unknown[]) => {
        const rows: { 'QUERY PLAN': string }[] = await this.db.query(`EXPLAIN ${sql}`, params);
        plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
        return this.db.query(sql, params);
      },
    };
    if (filter.state !== 'scheduled') await this.listNonScheduled(explaining, tenantId, filter, after, limit);
    if (!filter.state || filter.state === 'scheduled') await this.listScheduled(explaining, tenantId, filter, after, limit);
    return plans;
  }

  /**
   * Non-scheduled rows through jobs_tenant_list (tenant_id, run_at, id). Without a state/kind
   * filter the index order is the page order. With one, the filter is not in the index, so a
   * rare state (dead, cancelled) could walk a tenant's whole history: the scan is capped at
   * SCAN_CAP index rows per call, and a short page then carries a cursor at the last row
   * examined, so the client pages on with bounded work per request. Queued rows come this way
   * too: they are every row due within the hot horizon, no small set, and jobs_queued_due holds
   * every tenant's (through it, a tenant with 5 queued rows read another's 500,000: 85-110 ms
   * with the heap cached; here it reads its own 8).
   */
  private async listNonScheduled(
    db: Runner,
    tenantId: number,
    f: JobListFilter,
    after: ListPosition | null,
    limit: number,
  ): Promise<JobListPage> {
    if (f.state === 'running') return this.listRunning(db, tenantId, f, after, limit);
    const params: unknown[] = [tenantId];
    // `state <> 's'` repeats the partial index predicate so the planner can use jobs_tenant_list.
    const where = [`tenant_id = $1`, `state <> 's'`];
    where.push(...rangeAfter(f, after, params));
    const filters: string[] = [];
    if (f.state) filters.push(`state = $${params.push(STATE_CODE[f.state])}`);
    if (f.kind) filters.push(`kind = $${params.push(f.kind)}`);
    // Qualified: a bare `id` in ORDER BY would sort by the output column `id::text`.
    const order = 'ORDER BY jobs.run_at, jobs.id';
    if (filters.length === 0) {
      const rows: RawJob[] = await db.query(
        `SELECT ${COLUMNS} FROM jobs WHERE ${where.join(' AND ')} ${order} LIMIT $${params.push(limit)}`,
        params,
      );
      return pageOf(rows.map(toView), limit);
    }
    // A short page's cursor is the scan's last row when the scan stopped at the cap, taken from the
    // same scan: a second statement saw another snapshot, so a delete or state change in between
    // moved it, skipping or repeating rows.
    const capAt = params.push(SCAN_CAP);
    const rows: (RawJob & { edge_id: string | null; edge_position: string | null })[] = await db.query(
      `WITH scan AS MATERIALIZED (
         SELECT jobs.id, jobs.run_at, jobs.state, jobs.kind FROM jobs WHERE ${where.join(' AND ')} ${order} LIMIT $${capAt}),
       page AS (SELECT id FROM scan WHERE ${filters.join(' AND ')} ORDER BY run_at, id LIMIT $${params.push(limit)}),
       edge AS (SELECT id, run_at FROM scan WHERE (SELECT count(*) FROM scan) >= $${capAt} ORDER BY run_at DESC, id DESC LIMIT 1)
       SELECT edge.id::text AS edge_id, to_char(edge.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS edge_position, j.*
         FROM (SELECT 1) one LEFT JOIN edge ON true
         LEFT JOIN LATERAL (SELECT ${COLUMNS}, jobs.id AS seq FROM jobs WHERE jobs.id IN (SELECT id FROM page)) j ON true
        ORDER BY j.run_at, j.seq`,
      params,
    );
    const items = rows.filter((r) => r.id !== null).map(toView);
    if (items.length === limit) return pageOf(items, limit);
    const edge = rows[0];
    return { items, next: edge?.edge_id && edge.edge_position ? { runAt: edge.edge_position, id: edge.edge_id } : null };
  }

  /**
   * Running rows through their own partial index (jobs_running_lease), filtered by tenant: it
   * holds every tenant's running rows, but those are at most the fleet's handler slots, whatever
   * tenants store, and a tenant's few are not behind its whole history in jobs_tenant_list.
   * `tenant_id + 0` keeps the planner off the tenant indexes, whose estimate for a big tenant
   * would otherwise win on paper.
   */
  private async listRunning(
    db: Runner,
    tenantId: number,
    f: JobListFilter,
    after: ListPosition | null,
    limit: number,
  ): Promise<JobListPage> {
    const params: unknown[] = [tenantId];
    const where = [`state = '${STATE_CODE.running}'`, `(tenant_id + 0) = $1`];
    if (f.kind) where.push(`kind = $${params.push(f.kind)}`);
    where.push(...rangeAfter(f, after, params));
    const rows: RawJob[] = await db.query(
      `SELECT ${COLUMNS} FROM jobs WHERE ${where.join(' AND ')} ORDER BY jobs.run_at, jobs.id LIMIT $${params.push(limit)}`,
      params,
    );
    return pageOf(rows.map(toView), limit);
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
  private async listScheduled(
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
      const nextHour = await this.nextColdHour(db, tenantId, hour);
      if (!nextHour || (f.to && nextHour >= f.to)) return { items, next: null };
      span = Math.min(span, budget);
      budget -= span;
      let spanEnd = new Date(nextHour.getTime() + span * HOUR_MS);
      let part = await this.readColdBuckets(db, tenantId, f, after, nextHour, spanEnd, limit - items.length, rowsLeft);
      rowsLeft -= part.read;
      if (part.cut?.getTime() === nextHour.getTime()) {
        // Its first hour alone holds more rows than are left to read: read that hour whole, as
        // the first read of a call (nothing narrower than an hour is in jobs_cold_tenant).
        if (items.length > 0) return { items, next: { runAt: isoMicros(nextHour), id: '0' } };
        spanEnd = new Date(nextHour.getTime() + HOUR_MS);
        part = await this.readColdBuckets(db, tenantId, f, after, nextHour, spanEnd, limit, null);
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
  private async nextColdHour(db: Runner, tenantId: number, from: Date | null): Promise<Date | null> {
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
  private async readColdBuckets(
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
}

/** The run-time range of the filter and the keyset position, as predicates binding into `params`. */
/** A tenant's cold rows in the hour buckets [$1, $2) ($3 the tenant), through jobs_cold_tenant. */
const COLD_SPAN = `state = 's' AND tenant_id = $3
            AND almanac_hour(run_at) >= almanac_hour($1::timestamptz) AND almanac_hour(run_at) < almanac_hour($2::timestamptz)`;

function rangeAfter(f: JobListFilter, after: ListPosition | null, params: unknown[]): string[] {
  const where: string[] = [];
  if (f.from) where.push(`run_at >= $${params.push(f.from)}`);
  if (f.to) where.push(`run_at < $${params.push(f.to)}`);
  if (after) where.push(`(run_at, id) > ($${params.push(after.runAt)}::timestamptz, $${params.push(after.id)}::bigint)`);
  return where;
}

function pageOf(items: JobView[], limit: number): JobListPage {
  const last = items[items.length - 1];
  return { items, next: items.length === limit && last ? { runAt: last.position, id: last.id } : null };
}

export function mergePages(a: JobListPage, b: JobListPage, limit: number): JobListPage {
  // Rows past either source's frontier may be preceded by rows that source has not read yet.
  const frontiers = [a.next, b.next].filter((p): p is ListPosition => p !== null);
  const frontier = frontiers.reduce<ListPosition | null>((m, p) => (m && comparePositions(m, p) <= 0 ? m : p), null);
  // By id as well: a row in both halves (one snapshot should make that impossible) is listed once.
  const merged = [...new Map([...a.items, ...b.items].map((j) => [j.id, j])).values()]
    .sort((x, y) => comparePositions({ runAt: x.position, id: x.id }, { runAt: y.position, id: y.id }))
    .filter((j) => !frontier || comparePositions({ runAt: j.position, id: j.id }, frontier) <= 0);
  const items = merged.slice(0, limit);
  const last = items[items.length - 1];
  if (items.length === limit && last) return { items, next: { runAt: last.position, id: last.id } };
  return { items, next: frontier };
}
