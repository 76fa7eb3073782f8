import { isJobState, validateKeyFormat, validateKind } from '@almanac/domain';
import { AttemptsRepository, isJobIdString, JobQueriesRepository, type JobListFilter, type JobView, type TenantRecord } from '@almanac/persistence';
import { ALMANAC_CONFIG, type AlmanacConfig, Clock } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { invalid, notFound } from '../http/api-error';
import { Issues, queryInt, queryString, rejectUnknownQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from './cursor';
import { RequestsInFlight } from '../rate-limit/requests-in-flight';
import { JobWaits, MAX_WAIT_SECONDS } from './job-waits';
import { runAtIn } from './job-input';
import { attemptView, type AttemptView, jobDetail, jobSummary, type JobSummary } from './job-view';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
/**
 * Attempts a job's view carries, the newest; the rest are paged (GET /v1/jobs/:id/attempts). A
 * job retried to its 10,000 attempts made every read of it carry them all.
 */
export const ATTEMPTS_INLINE = 20;

/** Tenant-scoped reads. Another tenant's id is indistinguishable from a missing one (404). */
@Injectable()
export class JobQueriesService {
  constructor(
    private readonly queries: JobQueriesRepository,
    private readonly attemptsRepo: AttemptsRepository,
    private readonly clock: Clock,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
    private readonly waits: JobWaits,
    private readonly inFlight: RequestsInFlight,
  ) {}

  /** The job; with `waitSeconds`, once it has ended or that time ran out (JobWaits). */
  async get(tenant: TenantRecord, id: string, query: Record<string, unknown> = {}, over?: AbortSignal) {
    const issues = new Issues();
    rejectUnknownQuery(query, ['waitSeconds'], issues);
    const wait = queryInt(query.waitSeconds, 'waitSeconds', 0, 0, MAX_WAIT_SECONDS, issues);
    if (!issues.ok) throw invalid(issues.list);
    const read = async () => {
      const job = isJobIdString(id) ? await this.queries.findForTenant(tenant.id, id, over) : null;
      if (!job) throw notFound(`job ${id}`);
      return job;
    };
    if (wait === 0) return this.detail(tenant, await read(), over);
    // A long poll's reads each take one of the tenant's turns (RequestsInFlight), its pauses none.
    const turn = <T>(work: () => Promise<T>) => this.inFlight.during(tenant.id, over, work);
    const ended = await this.waits.wait(tenant.id, wait, () => turn(read), over);
    return turn(() => this.detail(tenant, ended, over));
  }

  /**
   * GET /v1/jobs/:id/attempts: a page of the job's attempts, newest first, and the cursor of the
   * next (older) page. 404 for a job that is not the tenant's.
   */
  async attemptPage(tenant: TenantRecord, id: string, query: Record<string, unknown>, over?: AbortSignal): Promise<{ items: AttemptView[]; nextCursor: string | null }> {
    const issues = new Issues();
    rejectUnknownQuery(query, ['limit', 'cursor'], issues);
    const limit = queryInt(query.limit, 'limit', ATTEMPTS_INLINE, 1, MAX_PAGE, issues);
    const cursor = queryString(query.cursor, 'cursor', issues);
    const before = cursor === undefined ? undefined : /^[1-9][0-9]{0,4}$/.test(cursor) && Number(cursor) <= 32767 ? Number(cursor) : null;
    if (before === null) issues.add('cursor', 'format', 'cursor is not one this API returned');
    if (!issues.ok) throw invalid(issues.list);
    const job = isJobIdString(id) ? await this.queries.findForTenant(tenant.id, id, over) : null;
    if (!job) throw notFound(`job ${id}`);
    const page = await this.attemptsRepo.listForJob(tenant.id, id, { before: before ?? undefined, limit: limit + 1 }, over);
    const items = page.slice(0, limit);
    return { items: items.map(attemptView), nextCursor: page.length > limit ? String(items[items.length - 1].attempt) : null };
  }

  /** The job with its newest ATTEMPTS_INLINE attempts (oldest of them first) and the cursor of the rest. */
  private async detail(tenant: TenantRecord, job: JobView, over?: AbortSignal) {
    const page = await this.attemptsRepo.listForJob(tenant.id, job.id, { limit: ATTEMPTS_INLINE + 1 }, over);
    const shown = page.slice(0, ATTEMPTS_INLINE);
    const historyNext = page.length > ATTEMPTS_INLINE ? String(shown[shown.length - 1].attempt) : null;
    return { ...jobDetail(job, shown.reverse(), this.clock.now(), this.config.horizons), historyNext };
  }

  /** GET /v1/jobs with `key`: the one job for that key; otherwise a filtered page. */
  async search(tenant: TenantRecord, query: Record<string, unknown>, over?: AbortSignal) {
    const issues = new Issues();
    // Before the key branch: a lookup by key ignored a misspelt or misplaced parameter (waitSeconds).
    rejectUnknownQuery(query, ['key', 'state', 'kind', 'from', 'to', 'limit', 'cursor'], issues);
    const keyText = queryString(query.key, 'key', issues);
    if (keyText !== undefined) {
      // Any key a job can have, an occurrence's (`schedule:<id>:<instant>`) too: a read, not a name.
      const key = issues.run(() => validateKeyFormat(keyText));
      if (!issues.ok || key === undefined) throw invalid(issues.list);
      const job = await this.queries.findByKeyForTenant(tenant.id, key, over);
      if (!job) throw notFound(`job with key "${key}"`);
      return this.detail(tenant, job, over);
    }
    return this.list(tenant, query, issues, over);
  }

  private async list(
    tenant: TenantRecord,
    query: Record<string, unknown>,
    issues: Issues,
    over?: AbortSignal,
  ): Promise<{ items: JobSummary[]; nextCursor: string | null }> {
    const filter: JobListFilter = {};
    const state = queryString(query.state, 'state', issues);
    if (state !== undefined) {
      if (isJobState(state)) filter.state = state;
      else issues.add('state', 'enum', `state must be one of scheduled, queued, running, succeeded, dead, cancelled`);
    }
    const kind = queryString(query.kind, 'kind', issues);
    if (kind !== undefined) filter.kind = issues.run(() => validateKind(kind));
    const from = queryString(query.from, 'from', issues);
    if (from !== undefined) filter.from = runAtIn(from, 'from', issues);
    const to = queryString(query.to, 'to', issues);
    if (to !== undefined) filter.to = runAtIn(to, 'to', issues);
    if (filter.from && filter.to && filter.from >= filter.to) issues.add('to', 'after_from', 'to must be later than from');
    const limit = queryInt(query.limit, 'limit', DEFAULT_PAGE, 1, MAX_PAGE, issues);
    const cursorText = queryString(query.cursor, 'cursor', issues);
    const after = cursorText === undefined ? null : decodeCursor(cursorText);
    if (cursorText !== undefined && !after) issues.add('cursor', 'format', 'cursor is not one this API returned');
    if (!issues.ok) throw invalid(issues.list);
    const page = await this.queries.list(tenant.id, filter, after, limit, over);
    const now = this.clock.now();
    return {
      items: page.items.map((j) => jobSummary(j, now, this.config.horizons)),
      nextCursor: page.next ? encodeCursor(page.next) : null,
    };
  }
}
