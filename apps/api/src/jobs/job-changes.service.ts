import { entryState, MAX_LIFETIME_ATTEMPTS, tierFor } from '@almanac/domain';
import { isJobIdString, JobChangesRepository, type RescheduleOutcome, type TenantRecord } from '@almanac/persistence';
import { ALMANAC_CONFIG, type AlmanacConfig, Clock } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import { ApiError, conflict, invalid, notFound } from '../http/api-error';
import { intInRange, isPlainObject, Issues, rejectUnknown } from '../http/validation';
import { HotRoutingService } from './hot-routing.service';
import { MAX_ATTEMPTS_LIMIT, runAtIn } from './job-input';
import { jobSummary, type JobSummary } from './job-view';

/**
 * Cancel, reschedule, retry. Each is one guarded UPDATE that checks the state it expects, so
 * against a worker's claim (which moves `queued` to `running` the same way) exactly one wins and
 * an API call that loses gets 409. No hint is looked for: a row moved or cancelled makes its old
 * hint stale, and the claim drops it; a row now due within the hot horizon gets a new hint.
 */
@Injectable()
export class JobChangesService {
  @InjectPinoLogger('job-changes') private readonly log!: PinoLogger;

  constructor(
    private readonly changes: JobChangesRepository,
    private readonly routing: HotRoutingService,
    private readonly clock: Clock,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
  ) {}

  async cancel(tenant: TenantRecord, id: string): Promise<JobSummary> {
    if (!isJobIdString(id)) throw notFound(`job ${id}`);
    const res = await this.changes.cancel(tenant.id, id);
    switch (res.outcome) {
      case 'not_found':
        throw notFound(`job ${id}`);
      case 'conflict':
        throw conflict(`job ${id} is ${res.state} and can no longer be cancelled`, 'state', 'not_cancellable');
      case 'already_cancelled':
        return this.summary(res.job);
      case 'cancelled':
        this.log.info({ tenantId: tenant.id, jobId: id, kind: res.job.kind }, 'job cancelled');
        return this.summary(res.job);
    }
  }

  async reschedule(tenant: TenantRecord, id: string, body: unknown): Promise<JobSummary> {
    const issues = new Issues();
    let runAt: Date | undefined;
    if (!isPlainObject(body)) issues.add('body', 'type', 'body must be a JSON object {"runAt": ...}');
    else {
      rejectUnknown(body, ['runAt'], issues);
      if (body.runAt === undefined) issues.add('runAt', 'required', 'runAt is required');
      else runAt = runAtIn(body.runAt, 'runAt', issues);
    }
    if (!issues.ok || !runAt) throw invalid(issues.list);
    if (!isJobIdString(id)) throw notFound(`job ${id}`);
    const state = this.stateFor(runAt);
    const res = await this.changes.reschedule(tenant.id, id, runAt, state);
    return this.afterMove(id, res, 'rescheduled');
  }

  async retry(tenant: TenantRecord, id: string, body: unknown): Promise<JobSummary> {
    const issues = new Issues();
    // Unsent: now by the database's clock, which claims go by (a host ahead of it delayed the job).
    let runAt: Date | null = null;
    let extra: number | undefined = 1;
    if (body !== undefined && body !== null && !(isPlainObject(body) && Object.keys(body).length === 0)) {
      if (!isPlainObject(body)) issues.add('body', 'type', 'body must be a JSON object');
      else {
        rejectUnknown(body, ['runAt', 'extraAttempts'], issues);
        if (body.runAt !== undefined) runAt = runAtIn(body.runAt, 'runAt', issues) ?? null;
        if (body.extraAttempts !== undefined) extra = intInRange(body.extraAttempts, 'extraAttempts', 1, MAX_ATTEMPTS_LIMIT, issues);
      }
    }
    if (!issues.ok || !extra) throw invalid(issues.list);
    if (!isJobIdString(id)) throw notFound(`job ${id}`);
    const res = await this.changes.retryDead(tenant.id, id, runAt, runAt ? this.stateFor(runAt) : entryState('immediate'), extra);
    return this.afterMove(id, res, 'retried');
  }

  private stateFor(runAt: Date): 'scheduled' | 'queued' {
    return entryState(tierFor(runAt, this.clock.now(), this.config.horizons));
  }

  private async afterMove(id: string, res: RescheduleOutcome, verb: 'rescheduled' | 'retried'): Promise<JobSummary> {
    if (res.outcome === 'not_found') throw notFound(`job ${id}`);
    if (res.outcome === 'attempt_limit') {
      const why = `the job has used ${res.attempts} attempts; a job has at most ${MAX_LIFETIME_ATTEMPTS.toLocaleString('en')} in its life`;
      throw new ApiError(409, `job ${id} cannot be retried: ${why}`, [{ field: 'extraAttempts', rule: 'attempt_limit', message: why }]);
    }
    if (res.outcome === 'conflict') {
      const why = verb === 'retried' ? 'only dead jobs can be retried' : 'only scheduled or queued jobs can be rescheduled';
      throw new ApiError(409, `job ${id} is ${res.state}: ${why}`, [
        { field: 'state', rule: verb === 'retried' ? 'not_dead' : 'not_reschedulable', message: why },
      ]);
    }
    let job = res.job;
    if (job.state === 'queued') {
      const demoted = await this.routing.enqueueOrDemote([{ id, dueMs: job.runAt.getTime(), tenantId: job.tenantId, kind: job.kind }]);
      if (demoted.size) job = { ...job, state: 'scheduled' };
    }
    this.log.info({ tenantId: job.tenantId, jobId: id, kind: job.kind, state: job.state }, `job ${verb}`);
    return this.summary(job);
  }

  private summary(job: Parameters<typeof jobSummary>[0]): JobSummary {
    return jobSummary(job, this.clock.now(), this.config.horizons);
  }
}
