import { isJobState, validateKey, validateKind } from '@almanac/domain';
import { AttemptsRepository, isJobIdString, JobQueriesRepository, type JobListFilter, type TenantRecord } from '@almanac/persistence';
import { ALMANAC_CONFIG, type AlmanacConfig, Clock } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { invalid, notFound } from '../http/api-error';
import { Issues, queryInt, queryString } from '../http/validation';
import { decodeCursor, encodeCursor } from './cursor';
import { runAtIn } from './job-input';
import { jobDetail, jobSummary, type JobSummary } from './job-view';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

/** Tenant-scoped reads. Another tenant's id is indistinguishable from a missing one (404). */
@Injectable()
export class JobQueriesService {
  constructor(
    private readonly queries: JobQueriesRepository,
    private readonly attempts: AttemptsRepository,
    private readonly clock: Clock,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
  ) {}

  async get(tenant: TenantRecord, id: string) {
    const job = isJobIdString(id) ? await this.queries.findForTenant(tenant.id, id) : null;
    if (!job) throw notFound(`job ${id}`);
    const attempts = await this.attempts.listForJob(tenant.id, id);
    return jobDetail(job, attempts, this.clock.now(), this.config.horizons);
  }

  /** GET /v1/jobs with `key`: the one job for that key; otherwise a filtered page. */
  async search(tenant: TenantRecord, query: Record<string, unknown>) {
    const issues = new Issues();
    const keyText = queryString(query.key, 'key', issues);
    if (keyText !== undefined) {
      const key = issues.run(() => validateKey(keyText));
      if (!issues.ok || key === undefined) throw invalid(issues.list);
      const job = await this.queries.findByKeyForTenant(tenant.id, key);
      if (!job) throw notFound(`job with key "${key}"`);
      const attempts = await this.attempts.listForJob(tenant.id, job.id);
      return jobDetail(job, attempts, this.clock.now(), this.config.horizons);
    }
    return this.list(tenant, query, issues);
  }

  private async list(
    tenant: TenantRecord,
    query: Record<string, unknown>,
    issues: Issues,
  ): Promise<{ items: JobSummary[]; nextCursor: string | null }> {
    const known = ['key', 'state', 'kind', 'from', 'to', 'limit', 'cursor'];
    for (const k of Object.keys(query)) {
      if (!known.includes(k)) issues.add(k, 'unknown_field', `${k} is not a known query parameter (expected ${known.join(', ')})`);
    }
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
    const page = await this.queries.list(tenant.id, filter, after, limit);
    const now = this.clock.now();
    return {
      items: page.items.map((j) => jobSummary(j, now, this.config.horizons)),
      nextCursor: page.next ? encodeCursor(page.next) : null,
    };
  }
}
