import { type JobState, tierFor } from '@almanac/domain';
import { JobsRepository, type TenantRecord } from '@almanac/persistence';
import { ALMANAC_CONFIG, type AlmanacConfig, Clock } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { ApiError, conflict, type ErrorBody, invalid, overLimit } from '../http/api-error';
import { isPlainObject, Issues, rejectUnknown } from '../http/validation';
import { KindsService } from '../kinds/kinds.service';
import { IngestRateLimiter } from '../rate-limit/ingest-rate-limiter';
import { StoredBytesQuota } from '../tenants/stored-bytes-quota';
import { type CommitEntry, type CommitResult, IngestCommit } from './ingest-commit';
import { parseJobInput } from './job-input';
import { jobSummary, type JobSummary, removedJob, type RemovedJob } from './job-view';
import { TenantSlots } from '../rate-limit/tenant-slots';

export const MAX_BATCH = 1000;

/**
 * How long a batch refused a slot waits for one (TenantSlots.acquire), every one held or its
 * tenant holding its share: a 1,000-job
 * batch commits in ~70 ms (bench/ingest.ts), so a slot comes back within it unless the database
 * stalls, and then the batch is still shed within a quarter of a second.
 */
const BATCH_SLOT_WAIT_MS = 250;

type BatchAnswer = { results: BatchItem[]; created: number; existing: number; removed: number; errors: number };

export type BatchItem =
  | { index: number; status: 'created' | 'existing'; job: JobSummary }
  | { index: number; status: 'removed'; removed: RemovedJob }
  | { index: number; status: 'error'; error: Omit<ErrorBody, 'error'> };

/**
 * Ingest: rate-limit, validate, commit rows (group-committed across concurrent requests),
 * then route immediate/hot rows to the hot queue. Every answer comes after the commit.
 */
@Injectable()
export class IngestService {
  constructor(
    private readonly jobs: JobsRepository,
    private readonly commits: IngestCommit,
    private readonly limiter: IngestRateLimiter,
    private readonly kinds: KindsService,
    private readonly quota: StoredBytesQuota,
    private readonly clock: Clock,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
  ) {
    // All but one: a lone tenant's import on several connections keeps most of them (at half, the
    // 4 lanes of one tenant in bench/ingest.ts would be shed on two); the one left is shared by
    // every other tenant, who wait for slots in turn.
    this.batches = new TenantSlots(settings.batchesInFlight, Math.max(1, settings.batchesInFlight - 1));
  }

  /** Batch requests of this replica between their shedding check and their answer: one tenant holds all but one at most. */
  private readonly batches: TenantSlots;

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
    const result = await charge.settle(this.commits.one(entry, deadline), (r) => (r.status === 'created' ? [entry.input.key] : []));
    if (result.status === 'failed') throw result.error;
    if (result.status === 'conflict') throw this.conflictError(parsed.value.key, result.fields);
    if (result.status === 'retired') {
      if (parsed.value.replay === 'result') return { removed: removedJob(result) };
      throw retiredError(result);
    }
    return { created: result.status === 'created', job: jobSummary(result.job, now, this.config.horizons) };
  }

  /**
   * POST /v1/jobs/batch: one result per item, in order; bad items do not sink the rest. Sheds
   * load past `batchesInFlight` before any work, after waiting BATCH_SLOT_WAIT_MS at most for a
   * slot: a batch each client retries after its 503 must not queue behind a stalled database, nor
   * take all the pool's connections from group commits and reads. One tenant holds all but one of
   * them at most: its batches (stuck on a key of its own, or a flood within its rate) leave one to
   * the others, who wait for slots in turn. Past `deadline`, a batch not yet written is withdrawn.
   */
  async createBatch(tenant: TenantRecord, body: unknown, traceParent: string | null = null, deadline?: AbortSignal): Promise<BatchAnswer> {
    // The slot comes before the rate limit: a shed batch, which its client resends, spends none of it.
    const release = await this.batches.acquire(tenant.id, BATCH_SLOT_WAIT_MS, deadline);
    const { most, share } = this.batches;
    if (release === 'full') throw overLimit(503, `this replica commits ${most} batches at once`, 'jobs', 'concurrent_batches', 1000);
    if (release === 'share') throw overLimit(503, `this replica commits ${most} batches at once, at most ${share} of one tenant's`, 'jobs', 'tenant_concurrent_batches', 1000);
    try {
      return await this.commitBatch(tenant, body, traceParent, deadline);
    } finally {
      release();
    }
  }

  private async commitBatch(tenant: TenantRecord, body: unknown, traceParent: string | null, deadline: AbortSignal | undefined): Promise<BatchAnswer> {
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
    // The look-ups above may have waited on a stalled database: an answered request writes nothing.
    const committed = await charge.settle(withdrawnPast(deadline, () => this.commits.many(valid.map((v) => v.entry), deadline)), created);
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

/** `write`, unless `deadline` has passed: then its reason, and nothing written. */
async function withdrawnPast<T>(deadline: AbortSignal | undefined, write: () => Promise<T>): Promise<T> {
  deadline?.throwIfAborted();
  return write();
}
