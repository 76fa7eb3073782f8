import { entryState, type JobState, type Tier } from '@almanac/domain';
import { type JobRecord, JobsRepository, type TenantJob } from '@almanac/persistence';
import { isTransientDependencyError, MetricsService, MicroBatcher } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable } from '@nestjs/common';
import type { Counter, Histogram } from 'prom-client';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { unavailable } from '../http/api-error';
import { HotRoutingService } from './hot-routing.service';
import { differingFields, type JobInput } from './job-input';

export interface CommitEntry {
  tenantId: number;
  input: JobInput;
  tier: Tier;
  /** The ingest span's traceparent (null while tracing is off). */
  traceParent: string | null;
}

export type CommitResult =
  | { status: 'created' | 'existing'; job: JobRecord }
  | { status: 'conflict'; job: JobRecord; fields: string[] }
  /** The key named a job retention removed; it stays reserved. */
  | { status: 'retired'; key: string; removedOn: string; state: JobState; reservedThrough: string | null; resultDigest: string | null }
  /** This tenant's insert failed; other tenants sharing the group commit are not affected by a value of its jobs. */
  | { status: 'failed'; error: unknown };

/**
 * Group commit of new jobs, the way databases do it: concurrent requests' rows go to Postgres
 * together (one insert, of several tenants' rows), then the immediate/hot rows created to the hot queue.
 * Every answer comes after the commit.
 */
@Injectable()
export class IngestCommit implements BeforeApplicationShutdown {
  private readonly batcher: MicroBatcher<CommitEntry, CommitResult>;
  private readonly ingested: Counter<'tier'>;
  private readonly groupSize: Histogram;
  /** Single-job POSTs of each tenant waiting for (or in) a group commit: one tenant holds at most half the queue. */
  private readonly pendingOf = new Map<number, number>();
  /** Single POSTs from arrival to answer: waiting for their insert, in it, or waiting for their hint. */
  private waiting = 0;

  constructor(
    private readonly jobs: JobsRepository,
    private readonly routing: HotRoutingService,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    metrics: MetricsService,
  ) {
    // Group commit, the way databases do it: a group leaves at the end of the event-loop turn
    // while a commit slot is free; otherwise what arrives meanwhile goes together when one frees.
    // A group is one insert of every waiting tenant's POSTs, each tenant a fair share of it:
    // another tenant's backlog holds a POST back by the inserts already running, no more, and
    // many tenants' POSTs share one commit (one insert per tenant: p99 74 ms at 1,000 POSTs/s from
    // 50 tenants, bench/ingest.ts --tenants). At most commitsInFlight run, so the connections
    // they hold are bounded.
    this.batcher = new MicroBatcher((entries) => this.insertGroup(entries), {
      maxInFlight: settings.commitsInFlight,
      maxBatch: settings.batchMaxItems,
      keyOf: (entry) => entry.tenantId,
      shareBatches: true,
    });
    this.ingested = metrics.counter({
      name: 'almanac_jobs_ingested_total',
      help: 'Jobs created through the API, by tier at ingest',
      labelNames: ['tier'],
    });
    this.groupSize = metrics.histogram({
      name: 'almanac_ingest_commit_rows',
      help: 'Rows per ingest insert (a group commit of single-job POSTs, or one batch request)',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
    });
  }

  /** Commits what is waiting for company, and gives it its hints, while the database and Redis are still up. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.batcher.drain();
    await this.routing.drain();
  }

  /**
   * Sheds load rather than queue without bound behind a stalled or saturated database; one
   * tenant's flood (within its rate, say 64 KiB payloads) fills half the queue, not all of it,
   * and takes turns with other tenants' POSTs, group by group.
   */
  async one(entry: CommitEntry, deadline?: AbortSignal): Promise<CommitResult> {
    const max = this.settings.maxPendingCommits;
    const mine = this.pendingOf.get(entry.tenantId) ?? 0;
    if (this.waiting >= max) throw unavailable('too many jobs are waiting to be committed; retry shortly');
    if (mine >= Math.max(1, Math.floor(max / 2))) throw unavailable("too many of this tenant's jobs are waiting to be committed; retry shortly");
    this.pendingOf.set(entry.tenantId, mine + 1);
    this.waiting++;
    try {
      // The commit slot is free again once the insert has committed: the hint goes outside it.
      const committed = await this.batcher.submit(entry, deadline);
      const [result] = await this.hinted([entry], [committed]);
      return result;
    } finally {
      this.waiting--;
      const left = (this.pendingOf.get(entry.tenantId) ?? 1) - 1;
      if (left > 0) this.pendingOf.set(entry.tenantId, left);
      else this.pendingOf.delete(entry.tenantId);
    }
  }

  /**
   * One insertBatch per tenant (concurrently), then the hints of the immediate/hot rows created.
   * Results in input order. A tenant whose insert fails gets `failed` for its items; the others'
   * committed rows still go to the queue and answer.
   */
  async many(entries: CommitEntry[], over?: AbortSignal): Promise<CommitResult[]> {
    const byTenant = new Map<number, number[]>();
    entries.forEach((e, i) => {
      const list = byTenant.get(e.tenantId);
      if (list) list.push(i);
      else byTenant.set(e.tenantId, [i]);
    });
    const results = new Array<CommitResult>(entries.length);
    await Promise.all(
      [...byTenant.values()].map(async (indices) => {
        const out = await this.insertGroup(indices.map((i) => entries[i]), over);
        indices.forEach((i, k) => (results[i] = out[k]));
      }),
    );
    return this.hinted(entries, results);
  }

  /** Hints for the rows created due soon; a row whose hint Redis did not take answers `scheduled`, left to the promoter. */
  private async hinted(entries: CommitEntry[], results: CommitResult[]): Promise<CommitResult[]> {
    const hot = results.flatMap((r) =>
      r.status === 'created' && r.job.state === 'queued'
        ? [{ id: r.job.id, dueMs: r.job.runAt.getTime(), tenantId: r.job.tenantId, kind: r.job.kind }]
        : [],
    );
    const demoted = await this.routing.enqueueOrDemote(hot);
    const perTier: Record<Tier, number> = { immediate: 0, hot: 0, cold: 0 };
    results.forEach((r, i) => {
      if (r.status !== 'created') return;
      perTier[entries[i].tier]++;
      if (demoted.has(r.job.id)) results[i] = { status: 'created', job: { ...r.job, state: 'scheduled' } };
    });
    for (const tier of ['immediate', 'hot', 'cold'] as const) if (perTier[tier]) this.ingested.inc({ tier }, perTier[tier]);
    return results;
  }

  /**
   * Entries of one tenant or several in one insert, results in their order; a failed insert is
   * `failed` for each. An insert of several tenants that fails, unless Postgres is away or slow
   * (then each would wait again), goes again tenant by tenant, so one tenant's value or row fails
   * only its own jobs.
   */
  private async insertGroup(entries: CommitEntry[], over?: AbortSignal): Promise<CommitResult[]> {
    if (entries.length === 0) return [];
    this.groupSize.observe(entries.length);
    const items: TenantJob[] = entries.map(({ tenantId, input, tier, traceParent }) => ({
      tenantId,
      job: { traceParent, kind: input.kind, key: input.key, runAt: input.runAt, payload: input.payload, maxAttempts: input.maxAttempts, state: entryState(tier) },
    }));
    try {
      const outcomes = await this.jobs.insertMany(items, undefined, over);
      return outcomes.map((o, i) => {
        if (o.status === 'created' || o.status === 'retired') return o;
        const fields = differingFields(o.job, entries[i].input);
        return fields.length ? { status: 'conflict', job: o.job, fields } : o;
      });
    } catch (error) {
      const tenants = new Map<number, number[]>();
      entries.forEach((e, i) => (tenants.get(e.tenantId)?.push(i) ?? tenants.set(e.tenantId, [i])));
      if (tenants.size < 2 || over?.aborted || isTransientDependencyError(error)) return entries.map(() => ({ status: 'failed', error }));
      const results = new Array<CommitResult>(entries.length);
      for (const indices of tenants.values()) {
        const out = await this.insertGroup(indices.map((i) => entries[i]), over);
        indices.forEach((i, k) => (results[i] = out[k]));
      }
      return results;
    }
  }
}
