import { entryState, type JobState, type Tier } from '@almanac/domain';
import { type JobRecord, JobsRepository, type TenantJob } from '@almanac/persistence';
import { type BatchLane, isDependencyAway, isRowLockTimeout, MetricsService, MicroBatcher, RUN_ALONE, sqlStateOf } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable } from '@nestjs/common';
import type { Counter, Histogram } from 'prom-client';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { unavailable } from '../http/api-error';
import { HotRoutingService } from './hot-routing.service';
import { differingFields, type JobInput } from './job-input';
import { TenantSlots } from '../rate-limit/tenant-slots';

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
  /** This tenant's insert failed (or the shared insert, Postgres being away or slow); another tenant's rows never fail it. */
  | { status: 'failed'; error: unknown };

/**
 * The lock_timeout of an insert in the group commit's shared slots (several tenants' POSTs, or
 * one tenant's). Its row-lock waits are on one tenant's own key in flight (its batch request, or
 * a replay not yet committed), so past it the insert goes again as each tenant's own, in the same
 * slots; one failing so again, in slots for those (MicroBatcher's aloneRunning), under the
 * session's lock timeout. Above a 1,000-job batch request's insert (its whole request ~67 ms at
 * bench/ingest.ts's 60,000 jobs/s on 4 connections), which a replay racing it would wait for; well
 * under a POST's deadline, so a shared insert meeting a held key costs the others one such wait,
 * two for a tenant in it behind held ones (sent back, all but one shared slot), never the key's
 * duration (the tenant's own inserts wait for it one at a time). Shorter, a tenant racing its own
 * batch request, or a worker's update of its row, was taken for held (review: 5 ms).
 */
const SHARED_LOCK_TIMEOUT_MS = 150;
/**
 * The most of one tenant's POSTs in an insert it shares with others, however long its backlog
 * (besides "no more than the largest other tenant waits with"): ~50 small rows are ~1 ms of
 * insert. Alone, a tenant fills the insert (ALMANAC_INGEST_BATCH_MAX).
 */
const SHARED_ROWS_PER_TENANT = 50;
/**
 * A POST with more payload never shares an insert: it goes in its tenant's own, so one tenant's
 * large rows cannot bring a shared insert near its statement timeout (50 × 8 KiB is 400 KiB).
 */
const SHARED_PAYLOAD_MAX_BYTES = 8 * 1024;

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
  private readonly sentAlone: Counter<'reason'>;
  /** Single POSTs from arrival to answer (waiting for their insert, in it, or for their hint): one tenant holds at most half. */
  private readonly pending: TenantSlots;

  constructor(
    private readonly jobs: JobsRepository,
    private readonly routing: HotRoutingService,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    metrics: MetricsService,
  ) {
    this.pending = new TenantSlots(settings.maxPendingCommits);
    // Group commit, the way databases do it: a group leaves at the end of the event-loop turn
    // while a commit slot is free; otherwise what arrives meanwhile goes together when one frees.
    // A group is one insert of every waiting tenant's POSTs, each tenant a fair share of it:
    // another tenant's backlog holds a POST back by the inserts already running, no more, and
    // many tenants' POSTs share one commit (one insert per tenant: p99 74 ms at 1,000 POSTs/s from
    // 50 tenants, bench/ingest.ts --tenants). At most commitsInFlight run, and as many inserts of
    // one tenant's own, so the connections they hold are bounded. A shared insert failing on a
    // tenant's rows sends each tenant's POSTs back to the queue as inserts of their own (commitGroup).
    this.batcher = new MicroBatcher((entries, lane) => this.commitGroup(entries, lane), {
      maxInFlight: settings.commitsInFlight,
      maxBatch: settings.batchMaxItems,
      keyOf: (entry) => entry.tenantId,
      shareBatches: true,
      maxShare: SHARED_ROWS_PER_TENANT,
      alone: (entry) => entry.input.payloadBytes > SHARED_PAYLOAD_MAX_BYTES,
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
    this.sentAlone = metrics.counter({
      name: 'almanac_ingest_shared_inserts_split_total',
      help: "Inserts of several tenants' POSTs that failed on their rows and went again as each tenant's own, by why (held_key: a row lock past 150 ms; deadlock; refused: a value or trigger)",
      labelNames: ['reason'],
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
   * and adds to a shared insert no more than the other tenants bring (its 64 KiB rows go alone).
   */
  async one(entry: CommitEntry, deadline?: AbortSignal): Promise<CommitResult> {
    const release = this.pending.take(entry.tenantId);
    if (release === 'full') throw unavailable('too many jobs are waiting to be committed; retry shortly');
    if (release === 'share') throw unavailable("too many of this tenant's jobs are waiting to be committed; retry shortly");
    try {
      // The commit slot is free again once the insert has committed: the hint goes outside it.
      const committed = await this.batcher.submit(entry, deadline);
      const [result] = await this.hinted([entry], [committed]);
      return result;
    } finally {
      release();
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
   * A group of the batcher: one tenant's entries that go alone in one insert, as insertGroup;
   * others (several tenants', or one tenant's in the shared slots) under SHARED_LOCK_TIMEOUT_MS.
   * An insert there failing for a reason tied to its rows (a lock wait on a tenant's own key, a
   * value or trigger Postgres refuses) answers RUN_ALONE: each tenant's entries go back to the
   * queue as a group of its own (MicroBatcher: in the same slots after a shared insert, in slots
   * of their own after one tenant's), where deadlines still withdraw them and a wait on its own
   * key holds none of the shared slots; one tenant's refused values fail at once. Postgres away or
   * slow (a statement timeout), or a lock timeout on the whole table (a migration's DDL: taken as
   * the statement starts, before it sets SHARED_LOCK_TIMEOUT_MS, so it waited the session's),
   * fails them all: each would only wait as long again.
   */
  private async commitGroup(entries: CommitEntry[], lane: BatchLane): Promise<(CommitResult | typeof RUN_ALONE)[]> {
    if (lane === 'alone') return this.insertGroup(entries);
    try {
      return await this.insertRows(entries, undefined, SHARED_LOCK_TIMEOUT_MS);
    } catch (error) {
      const state = sqlStateOf(error);
      const onTable = state === LOCK_NOT_AVAILABLE && !isRowLockTimeout(error);
      const reason = state === LOCK_NOT_AVAILABLE ? 'held_key' : state === DEADLOCK_DETECTED ? 'deadlock' : 'refused';
      const oneTenant = entries.every((e) => e.tenantId === entries[0].tenantId);
      // One tenant's values refused: going again alone would be refused the same.
      if (onTable || state === QUERY_CANCELED || isDependencyAway(error) || (oneTenant && reason === 'refused')) return entries.map(() => ({ status: 'failed', error }));
      if (!oneTenant) this.sentAlone.inc({ reason });
      return entries.map(() => RUN_ALONE);
    }
  }

  /** One tenant's entries in one insert, results in their order; a failed insert is `failed` for each. */
  private async insertGroup(entries: CommitEntry[], over?: AbortSignal): Promise<CommitResult[]> {
    try {
      return await this.insertRows(entries, over);
    } catch (error) {
      return entries.map(() => ({ status: 'failed', error }));
    }
  }

  /** Entries of one tenant or several in one insert, results in their order; throws what the insert throws. */
  private async insertRows(entries: CommitEntry[], over?: AbortSignal, lockTimeoutMs?: number): Promise<CommitResult[]> {
    if (entries.length === 0) return [];
    this.groupSize.observe(entries.length);
    const items: TenantJob[] = entries.map(({ tenantId, input, tier, traceParent }) => ({
      tenantId,
      job: { traceParent, kind: input.kind, key: input.key, runAt: input.runAt, payload: input.payload, maxAttempts: input.maxAttempts, state: entryState(tier) },
    }));
    const outcomes = await this.jobs.insertMany(items, undefined, over, { lockTimeoutMs });
    return outcomes.map((o, i) => {
      if (o.status === 'created' || o.status === 'retired') return o;
      const fields = differingFields(o.job, entries[i].input);
      return fields.length ? { status: 'conflict', job: o.job, fields } : o;
    });
  }
}

/** query_canceled: the shared insert took longer than the statement timeout (Postgres slow). */
const QUERY_CANCELED = '57014';
/** lock_not_available: a lock wait ran out (see isRowLockTimeout for which kind). */
const LOCK_NOT_AVAILABLE = '55P03';
/** deadlock_detected: two inserts took tenants' keys in opposite orders (counted, then each goes alone). */
const DEADLOCK_DETECTED = '40P01';
