import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { COUNT_BACKLOG_SQL } from '../statements/count-backlog.sql';
import { PARK_BACKLOG_SQL } from '../statements/park-backlog.sql';
import { TAKE_BACKLOG_SQL } from '../statements/take-backlog.sql';

export interface BacklogItem {
  id: string;
  pool: string;
  runAt: Date;
  tenantId: number;
  kind: string;
}

/** A tenant's jobs of one kind in one pool: the unit the backlog is parked and refilled by. */
export interface BacklogFlow {
  tenantId: number;
  kind: string;
}

/** `<tenant>:<kind>` (a kind has no `:`). */
export function flowKey(f: BacklogFlow): string {
  return `${f.tenantId}:${f.kind}`;
}

export function flowOf(key: string): BacklogFlow {
  const at = key.indexOf(':');
  return { tenantId: Number(key.slice(0, at)), kind: key.slice(at + 1) };
}

/** Parked jobs: pool → flow key → how many. */
export type BacklogCounts = Map<string, Map<string, number>>;

/**
 * The dispatch backlog (table dispatch_backlog): due jobs waiting for a pool to have room. Rows
 * here are references; the job row stays `queued`, so a cancel still works and a worker's claim
 * still decides. Each method is one statement for the whole batch.
 */
@Injectable()
export class BacklogRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Parks jobs; a job already parked stays as it was (a second hot copy of the same row). */
  async park(items: readonly BacklogItem[]): Promise<void> {
    if (items.length === 0) return;
    await sql(this.dataSource, PARK_BACKLOG_SQL, [
      items.map((i) => i.id), items.map((i) => i.runAt), items.map((i) => i.pool), items.map((i) => i.tenantId), items.map((i) => i.kind),
    ]);
  }

  /**
   * Takes up to `wants.get(flowKey)` of each named flow's parked jobs in a pool, oldest run time
   * first. SKIP LOCKED: two dispatchers refilling the same pool take disjoint sets.
   */
  async take(pool: string, wants: ReadonlyMap<string, number>): Promise<BacklogItem[]> {
    const asked = [...wants].filter(([, n]) => n > 0).map(([k, n]) => ({ ...flowOf(k), n }));
    if (asked.length === 0) return [];
    const { rows } = await sql<{ id: string; run_at: Date; tenant_id: number; kind: string }>(this.dataSource, TAKE_BACKLOG_SQL, [
      pool, asked.map((a) => a.tenantId), asked.map((a) => a.kind), asked.map((a) => a.n),
    ]);
    return rows
      .sort((a, b) => a.run_at.getTime() - b.run_at.getTime())
      .map((r) => ({ id: r.id, pool, runAt: r.run_at, tenantId: r.tenant_id, kind: r.kind }));
  }

  /** Parked jobs per pool and flow. */
  async counts(): Promise<BacklogCounts> {
    const { rows } = await sql<{ pool: string; tenant_id: number; kind: string; n: number }>(this.dataSource, COUNT_BACKLOG_SQL);
    const out: BacklogCounts = new Map();
    for (const r of rows) {
      let byFlow = out.get(r.pool);
      if (!byFlow) out.set(r.pool, (byFlow = new Map<string, number>()));
      byFlow.set(flowKey({ tenantId: r.tenant_id, kind: r.kind }), r.n);
    }
    return out;
  }
}
