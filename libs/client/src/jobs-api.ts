import type { Attempt, AttemptPage, BatchResult, BulkCancel, BulkReschedule, Job, JobDetail, JobListQuery, JobPage, JobSearchAnswer, Operation, RemovedJob, RetryJob } from './api-types';
import { idPath } from './errors';
import type { CreateJobRequest } from './kind-payloads';
import { eachItem } from './pages';
import { type CallOptions, createdByCall, type Transport } from './transport';

/** A create's answer: the job, and whether this call made it. */
export interface CreatedJob {
  /**
   * true: this call made the job; false: it was there before (the same request sent earlier);
   * null: the client resent this call after a 503, which may come after the job was made, so the
   * answer cannot tell whether this call or an earlier one made it.
   */
  created: boolean | null;
  job: Job;
}

/** A create with `replay: 'result'` whose key named a job retention removed: what the key keeps. */
export interface ReplayedRemovedJob {
  created: false;
  removed: RemovedJob;
}

const path = (id: string) => idPath('jobs', 'job', id);

/** /v1/jobs: create (one or a batch), look up, list, change, and bulk changes by filter. */
export class JobsApi<P extends object> {
  constructor(private readonly http: Transport) {}

  /**
   * Idempotent by key: the same request again answers the same job (created: false); a different
   * one with that key is a ConflictError, and so is a key whose job retention removed, unless the
   * request says `replay: 'result'`: then it answers what the key keeps (ReplayedRemovedJob).
   */
  create(job: CreateJobRequest<P> & { replay: 'result' }, options?: CallOptions): Promise<CreatedJob | ReplayedRemovedJob>;
  create(job: CreateJobRequest<P>, options?: CallOptions): Promise<CreatedJob>;
  async create(job: CreateJobRequest<P>, options?: CallOptions): Promise<CreatedJob | ReplayedRemovedJob> {
    const res = await this.http.request<Job | RemovedJob>({ method: 'POST', path: '/v1/jobs', body: job, idempotent: true, ...options });
    if ('removed' in res.body) return { created: false, removed: res.body };
    return { created: createdByCall(res), job: res.body };
  }

  /**
   * Up to 1,000 jobs; one result per job, in order (an invalid job is its item's error, not a
   * throw). After a 503 the batch is resent, and an item the first attempt made answers `existing`.
   */
  async batch(jobs: readonly CreateJobRequest<P>[], options?: CallOptions): Promise<BatchResult> {
    return (await this.http.request<BatchResult>({ method: 'POST', path: '/v1/jobs/batch', body: { jobs }, idempotent: true, ...options })).body;
  }

  /** The job with its payload, result and attempts; NotFoundError for another tenant's id. */
  async get(id: string, options?: CallOptions): Promise<JobDetail> {
    return (await this.http.request<JobDetail>({ method: 'GET', path: path(id), idempotent: true, ...options })).body;
  }

  /**
   * The job once it has ended (succeeded, dead or cancelled), or as it is after `seconds` (at most
   * 20): the API holds the answer, so no polling. 429 past a tenant's 10 waits at once per replica.
   */
  async waitFor(id: string, seconds: number, options?: CallOptions): Promise<JobDetail> {
    return (await this.http.request<JobDetail>({ method: 'GET', path: path(id), query: { waitSeconds: seconds }, idempotent: true, holdMs: seconds * 1000, ...options })).body;
  }

  /** A page of the job's attempts, newest first (a job's view carries the newest 20; its `historyNext` is the cursor of the rest). */
  async attempts(id: string, query: { cursor?: string; limit?: number } = {}, options?: CallOptions): Promise<AttemptPage> {
    return (await this.http.request<AttemptPage>({ method: 'GET', path: `${path(id)}/attempts`, query, idempotent: true, ...options })).body;
  }

  /** Every attempt of the job, newest first, page by page. */
  eachAttempt(id: string, options?: CallOptions): AsyncGenerator<Attempt, void, undefined> {
    return eachItem(async (cursor) => {
      const page = await this.attempts(id, { cursor, limit: 1000 }, options);
      return { items: page.items, next: page.nextCursor };
    });
  }

  /** The job for a key (did it run?); NotFoundError when there is none. */
  async findByKey(key: string, options?: CallOptions): Promise<JobDetail> {
    const { body } = await this.http.request<JobSearchAnswer>({ method: 'GET', path: '/v1/jobs', query: { key }, idempotent: true, ...options });
    if ('items' in body) throw new Error(`GET /v1/jobs?key=${encodeURIComponent(key)}: answered a page, not the job for the key`);
    return body;
  }

  /** One page, ordered by (runAt, id); pass `nextCursor` back as `cursor`, or use iterate(). A page may be short or empty before the end: only `nextCursor: null` ends the list. */
  async list(query: JobListQuery = {}, options?: CallOptions): Promise<JobPage> {
    return (await this.http.request<JobPage>({ method: 'GET', path: '/v1/jobs', query, idempotent: true, ...options })).body;
  }

  /** Every job that matches, page by page: `for await (const job of client.jobs.iterate({ state: 'dead' }))`. */
  iterate(query: Omit<JobListQuery, 'cursor'> = {}, options?: CallOptions): AsyncGenerator<Job, void, undefined> {
    return eachItem(async (cursor) => {
      const page = await this.list({ ...query, cursor }, options);
      return { items: page.items, next: page.nextCursor };
    });
  }

  /** Cancels a job that has not started (cancelling again is fine); ConflictError once it runs or ran. */
  async cancel(id: string, options?: CallOptions): Promise<Job> {
    return (await this.http.request<Job>({ method: 'DELETE', path: path(id), idempotent: true, ...options })).body;
  }

  /**
   * Moves a job that has not started to `runAt`; ConflictError once it runs or ran. Retried after
   * a 503 (moving to the same `runAt` twice is moving it once), so a ConflictError can also mean
   * the first attempt went through and the job started before the retry (a `runAt` near now):
   * get() the job to tell which.
   */
  async reschedule(id: string, runAt: string | Date, options?: CallOptions): Promise<Job> {
    return (await this.http.request<Job>({ method: 'PATCH', path: path(id), body: { runAt }, idempotent: true, ...options })).body;
  }

  /** Runs a dead job again (at `runAt`, default now, with `extraAttempts`, default 1); ConflictError unless it is dead. */
  async retry(id: string, change?: Omit<RetryJob, 'runAt'> & { runAt?: string | Date }, options?: CallOptions): Promise<Job> {
    // Not replayed after a 503: a retry that went through would answer a second one with a 409.
    return (await this.http.request<Job>({ method: 'POST', path: `${path(id)}/retry`, body: change, idempotent: false, ...options })).body;
  }

  /**
   * Starts cancelling every not-yet-started job that matches `filter`; follow the operation with
   * operations.get(id). Without a `key` it is never retried after a 503; with one, a resend
   * answers the same operation.
   */
  async bulkCancel(request: BulkCancel, options?: CallOptions): Promise<Operation> {
    return (await this.http.request<Operation>({ method: 'POST', path: '/v1/jobs/bulk-cancel', body: request, idempotent: request.key !== undefined, ...options })).body;
  }

  /**
   * Starts moving every not-yet-started job that matches, to `runAt` or by `shiftBySeconds`.
   * Without a `key` it is never retried after a 503: a shift that went through would move the
   * jobs twice. With one, a resend answers the same operation.
   */
  async bulkReschedule(change: BulkReschedule, options?: CallOptions): Promise<Operation> {
    return (await this.http.request<Operation>({ method: 'POST', path: '/v1/jobs/bulk-reschedule', body: change, idempotent: change.key !== undefined, ...options })).body;
  }
}
