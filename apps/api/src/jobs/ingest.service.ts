import { entryState, type JobState, tierFor, type Tier } from '@almanac/domain';
import { type JobRecord, JobsRepository, type NewJob, type TenantRecord } from '@almanac/persistence';
import { ALMANAC_CONFIG, type AlmanacConfig, Clock, MetricsService, MicroBatcher } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable } from '@nestjs/common';
import type { Counter, Histogram } from 'prom-client';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { ApiError, conflict, type ErrorBody, invalid, unavailable } from '../http/api-error';
import { isPlainObject, Issues, rejectUnknown } from '../http/validation';
import { KindsService } from '../kinds/kinds.service';
import { IngestRateLimiter } from '../rate-limit/ingest-rate-limiter';
import { StoredBytesQuota } from '../tenants/stored-bytes-quota';
import { HotRoutingService } from './hot-routing.service';
import { differingFields, type JobInput, parseJobInput } from './job-input';
import { jobSummary, type JobSummary, removedJob, type RemovedJob } from './job-view';

export const MAX_BATCH = 1000;

interface CommitEntry {
  tenantId: number;
  input: JobInput;
  tier: Tier;
  /** The ingest span's traceparent (null while tracing is off). */
  traceParent: string | null;
}

type CommitResult =
  | { status: 'created' | 'existing'; job: JobRecord }
  | { status: 'conflict'; job: JobRecord; fields: string[] }
  /** The key named a job retention removed; it stays reserved. */
  | { status: 'retired'; key: string; removedOn: string; state: JobState; reservedThrough: string | null; resultDigest: string | null }
  /** This tenant's insert failed; other tenants sharing the group commit are not affected. */
  | { status: 'failed'; error: unknown };

export type BatchItem =
  | { index: number; status: 'created' | 'existing'; job: JobSummary }
  | { index: number; status: 'removed'; removed: RemovedJob }
  | { index: number; status: 'error'; error: Omit<ErrorBody, 'error'> };

/**
 * Ingest: rate-limit, validate, commit rows (group-committed across concurrent requests),
 * then route immediate/hot rows to the hot queue. Every answer comes after the commit.
 */
@Injectable()
export class IngestService implements BeforeApplicationShutdown {
  private readonly batcher: MicroBatcher<CommitEntry, CommitResult>;
  private readonly ingested: Counter<'tier'>;
  private readonly groupSize: Histogram;
  /** Single-job POSTs of each tenant waiting for (or in) a group commit: one tenant holds at most half the queue. */
  private readonly pendingOf = new Map<number, number>();

  constructor(
    private readonly jobs: JobsRepository,
    private readonly routing: HotRoutingService,
    private readonly limiter: IngestRateLimiter,
    private readonly kinds: KindsService,
    private readonly quota: StoredBytesQuota,
    private readonly clock: Clock,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
    metrics: MetricsService,
  ) {
    // Group commit, the way databases do it: a group leaves at the end of the event-loop turn
    // while a commit slot is free; otherwise what arrives meanwhile goes together when one frees.
    this.batcher = new MicroBatcher((entries) => this.commit(entries), {
      maxInFlight: settings.commitsInFlight,
      maxBatch: settings.batchMaxItems,
    });
    this.ingested = metrics.counter({
      name: 'almanac_jobs_ingested_total',
      help: 'Jobs created through the API, by tier at ingest',
      labelNames: ['tier'],
    });
    this.groupSize = metrics.histogram({
      name: 'almanac_ingest_commit_rows',
      help: 'Rows per ingest commit (group commit of single-job POSTs, or one batch request)',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
    });
  }

  /** Commits what is waiting for company while the database and Redis are still up. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.batcher.drain();
  }

  /**
   * POST /v1/jobs: 201 created, 200 same request again, 409 same key with another body. A key
   * whose job retention removed: 409, or with `"replay": "result"` what the key keeps (200).
   * Past `deadline`, a job still waiting for its group commit is withdrawn, not written.
   */
  async createOne(tenant: TenantRecord, body: unknown, traceParent: string | null = null, deadline?: AbortSignal): Promise<{ created: boolean; job: JobSummary } | { removed: RemovedJob }> {
    // First, before any work: validating a job (and the kind catalogue it may re-read) costs the
    // API's event loop whether or not the job is valid, and an over-quota refusal reads the tenant's keys.
    await this.limiter.consume(tenant, 1);
    const parsed = parseJobInput(body, this.settings, await this.kinds.lookup([body]));
    if (!parsed.ok) throw invalid(parsed.issues);
    const charge = await this.quota.chargeNewKeys(tenant, [parsed.value], (keys) => this.jobs.knownKeys(tenant.id, keys));
    const now = this.clock.now();
    const entry = { tenantId: tenant.id, input: parsed.value, tier: tierFor(parsed.value.runAt, now, this.config.horizons), traceParent };
    // The charge comes back unless the job was created (shed, a replay, a conflict).
    const result = await charge.settle(this.submitOne(entry, deadline), (r) => (r.status === 'created' ? [entry.input.key] : []));
    if (result.status === 'failed') throw result.error;
    if (result.status === 'conflict') throw this.conflictError(parsed.value.key, result.fields);
    if (result.status === 'retired') {
      if (parsed.value.replay === 'result') return { removed: removedJob(result) };
      throw retiredError(result);
    }
    return { created: result.status === 'created', job: jobSummary(result.job, now, this.config.horizons) };
  }

  /**
   * Sheds load rather than queue without bound behind a stalled or saturated database; one
   * tenant's flood (within its rate, say 64 KiB payloads) fills half the queue, not all of it.
   */
  private async submitOne(entry: CommitEntry, deadline?: AbortSignal): Promise<CommitResult> {
    const max = this.settings.maxPendingCommits;
    const mine = this.pendingOf.get(entry.tenantId) ?? 0;
    if (this.batcher.pending >= max) throw unavailable('too many jobs are waiting to be committed; retry shortly');
    if (mine >= Math.max(1, Math.floor(max / 2))) throw unavailable("too many of this tenant's jobs are waiting to be committed; retry shortly");
    this.pendingOf.set(entry.tenantId, mine + 1);
    return this.batcher.submit(entry, deadline).finally(() => {
      const left = (this.pendingOf.get(entry.tenantId) ?? 1) - 1;
      if (left > 0) this.pendingOf.set(entry.tenantId, left);
      else this.pendingOf.delete(entry.tenantId);
    });
  }

  /** POST /v1/jobs/batch: one result per item, in order; bad items do not sink the rest. */
  async createBatch(
    tenant: TenantRecord, body: unknown, traceParent: string | null = null,
  ): Promise<{ results: BatchItem[]; created: number; existing: number; removed: number; errors: number }> {
    // Every item sent spends, valid or not, before any is validated (as createOne does).
    await this.limiter.consume(tenant, itemsSent(body));
    const jobs = this.batchEnvelope(body);
    const now = this.clock.now();
    const results: (BatchItem | undefined)[] = new Array<BatchItem | undefined>(jobs.length);
    const valid: { index: number; entry: CommitEntry }[] = [];
    const kinds = await this.kinds.lookup(jobs);
    jobs.forEach((raw, index) => {
      const parsed = parseJobInput(raw, this.settings, kinds);
      if (parsed.ok) {
        valid.push({ index, entry: { tenantId: tenant.id, input: parsed.value, tier: tierFor(parsed.value.runAt, now, this.config.horizons), traceParent } });
      } else {
        const e = invalid(parsed.issues);
        results[index] = { index, status: 'error', error: { statusCode: e.status, message: e.message, details: e.details } };
      }
    });
    const charge = await this.quota.chargeNewKeys(tenant, valid.map((v) => v.entry.input), (keys) => this.jobs.knownKeys(tenant.id, keys));
    const created = (rs: CommitResult[]) => rs.flatMap((r, i) => (r.status === 'created' ? [valid[i].entry.input.key] : []));
    const committed = await charge.settle(this.commit(valid.map((v) => v.entry)), created);
    const failed = committed.find((r) => r.status === 'failed');
    if (failed) throw failed.error;
    committed.forEach((r, i) => {
      const index = valid[i].index;
      if (r.status === 'failed') return; // thrown above
      if (r.status === 'conflict') {
        const e = this.conflictError(valid[i].entry.input.key, r.fields);
        results[index] = { index, status: 'error', error: { statusCode: 409, message: e.message, details: e.details } };
      } else if (r.status === 'retired' && valid[i].entry.input.replay === 'result') {
        results[index] = { index, status: 'removed', removed: removedJob(r) };
      } else if (r.status === 'retired') {
        const e = retiredError(r);
        results[index] = { index, status: 'error', error: { statusCode: 409, message: e.message, details: e.details } };
      } else {
        results[index] = { index, status: r.status, job: jobSummary(r.job, now, this.config.horizons) };
      }
    });
    const all = results as BatchItem[];
    return {
      results: all,
      created: all.filter((r) => r.status === 'created').length,
      existing: all.filter((r) => r.status === 'existing').length,
      removed: all.filter((r) => r.status === 'removed').length,
      errors: all.filter((r) => r.status === 'error').length,
    };
  }

  private batchEnvelope(body: unknown): unknown[] {
    const issues = new Issues();
    if (!isPlainObject(body)) {
      issues.add('body', 'type', 'body must be a JSON object {"jobs": [...]}');
      throw invalid(issues.list);
    }
    rejectUnknown(body, ['jobs'], issues);
    const jobs = body.jobs;
    if (jobs === undefined) issues.add('jobs', 'required', 'jobs is required');
    else if (!Array.isArray(jobs)) issues.add('jobs', 'type', 'jobs must be an array');
    else if (jobs.length > MAX_BATCH) issues.add('jobs', 'max_items', `jobs may hold at most ${MAX_BATCH} items, got ${jobs.length}`);
    if (!issues.ok) throw invalid(issues.list);
    return jobs as unknown[];
  }

  private conflictError(key: string, fields: string[]): ApiError {
    return conflict(
      `key "${key}" already names a job with a different ${fields.join(', ')}`,
      'key',
      'conflict',
    );
  }

  /**
   * One insertBatch per tenant in the group (concurrently), then one addBulk for every
   * immediate/hot row created. Results in input order. A tenant whose insert fails gets
   * `failed` for its items; the others' committed rows still go to the queue and answer.
   */
  private async commit(entries: CommitEntry[]): Promise<CommitResult[]> {
    if (entries.length === 0) return [];
    this.groupSize.observe(entries.length);
    const byTenant = new Map<number, number[]>();
    entries.forEach((e, i) => {
      const list = byTenant.get(e.tenantId);
      if (list) list.push(i);
      else byTenant.set(e.tenantId, [i]);
    });
    const results = new Array<CommitResult>(entries.length);
    await Promise.all(
      [...byTenant].map(async ([tenantId, indices]) => {
        try {
          await this.insertTenant(tenantId, indices, entries, results);
        } catch (error) {
          for (const i of indices) results[i] = { status: 'failed', error };
        }
      }),
    );
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

  /** One tenant's share of a commit: one insertBatch, results written at the entries' indices. */
  private async insertTenant(tenantId: number, indices: number[], entries: CommitEntry[], results: CommitResult[]): Promise<void> {
    const rows: NewJob[] = indices.map((i) => {
      const { input, tier, traceParent } = entries[i];
      return {
        traceParent,
        kind: input.kind,
        key: input.key,
        runAt: input.runAt,
        payload: input.payload,
        maxAttempts: input.maxAttempts,
        state: entryState(tier),
      };
    });
    const outcomes = await this.jobs.insertBatch(tenantId, rows);
    outcomes.forEach((o, k) => {
      const i = indices[k];
      if (o.status === 'created' || o.status === 'retired') {
        results[i] = o;
        return;
      }
      const fields = differingFields(o.job, entries[i].input);
      results[i] = fields.length ? { status: 'conflict', job: o.job, fields } : o;
    });
  }
}

/**
 * 409 for a replay of a key whose job retention removed: what it had become, when it went, and
 * how long the key stays reserved (`"replay": "result"` answers the same facts with 200).
 */
function retiredError(r: { key: string; removedOn: string; state: JobState; reservedThrough: string | null }): ApiError {
  const until = r.reservedThrough === null ? 'for good' : `through ${r.reservedThrough} (UTC)`;
  return conflict(
    `key "${r.key}" named a job that ended ${r.state} and was removed by retention on ${r.removedOn}; the key stays reserved ${until}` +
      ' (send "replay": "result" to be answered what it kept, with 200)',
    'key',
    'retired',
  );
}

/**
 * What a batch request costs of the ingest budget: the items it sends (a longer list than MAX_BATCH
 * costs MAX_BATCH and is refused), and at least one, so a body that is no batch at all is not free.
 */
function itemsSent(body: unknown): number {
  const jobs = isPlainObject(body) ? body.jobs : undefined;
  return Array.isArray(jobs) ? Math.min(Math.max(jobs.length, 1), MAX_BATCH) : 1;
}
