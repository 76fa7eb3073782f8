import type { JobState } from '@almanac/domain';
import { STATE_CODE } from '../job-state.codec';
import { COLUMNS } from '../statements/job-view-columns.sql';
import { JobView, RawJob, Runner, toView } from './job-view';

/**
 * A tenant's job list, keyset-paginated by `(run_at, id)`, always on an index that starts with
 * the tenant, so a tenant's listing costs the same whatever other tenants store: non-scheduled
 * rows through `jobs_tenant_list` (tenant_id, run_at, id) WHERE state <> 's'; scheduled (cold)
 * rows through `jobs_cold_tenant` (tenant_id, almanac_hour(run_at)), one run of hour buckets at a
 * time (the bucket, not the run time, is in that index: deduplicated, it costs a few bytes per
 * job). An unfiltered list merges the two sources. The statements are built from the filter and
 * cursor, so they live here and in cold-job-list.ts, not in statements/.
 */

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
function comparePositions(a: ListPosition, b: ListPosition): number {
  if (a.runAt !== b.runAt) return a.runAt < b.runAt ? -1 : 1;
  const x = BigInt(a.id);
  const y = BigInt(b.id);
  return x === y ? 0 : x < y ? -1 : 1;
}

/** Index rows a filtered non-scheduled list examines per call before answering a short page. */
export const SCAN_CAP = 10_000;
export function isoMicros(d: Date): string {
  return d.toISOString().replace('Z', '000Z');
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
export async function listNonScheduled(
  db: Runner,
  tenantId: number,
  f: JobListFilter,
  after: ListPosition | null,
  limit: number,
): Promise<JobListPage> {
  if (f.state === 'running') return listRunning(db, tenantId, f, after, limit);
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
async function listRunning(
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

/** The run-time range of the filter and the keyset position, as predicates binding into `params`. */
export function rangeAfter(f: JobListFilter, after: ListPosition | null, params: unknown[]): string[] {
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
