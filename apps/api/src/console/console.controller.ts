import { asUtcIfZoneless } from '@almanac/domain';
import { TenantsRepository } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { Body, Controller, Get, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid } from '../http/api-error';
import { RequestOver } from '../http/request-deadline.interceptor';
import { JobChangesService } from '../jobs/job-changes.service';
import { JobQueriesService } from '../jobs/job-queries.service';
import { decodeScheduleCursor } from '../schedules/schedule-cursor';
import { ScheduleRunsService } from '../schedules/schedule-runs.service';
import { SchedulesService } from '../schedules/schedules.service';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { ConsoleOverviewService, OVERVIEW_READ_COST } from './console-overview.service';
import { ConsolePages, type Form, type PageQuery } from './console-pages';
import { ConsoleSession } from './console-session';
import { consoleHref } from './console-viewer';
import { html } from './views/html';
import { jobView, type JobDetailView } from './views/job.view';
import { type JobFilterForm, type JobRow, jobsView } from './views/jobs.view';
import { overviewView } from './views/overview.view';
import { scheduleView } from './views/schedule.view';
import { schedulesView } from './views/schedules.view';
import { tenantsView } from './views/tenants.view';

/** What a post-then-redirect reports, by a fixed word (never text from the request). */
const NOTICES = new Map([
  ['cancelled', 'Job cancelled.'],
  ['rescheduled', 'Job rescheduled.'],
  ['retried', 'Job queued for another attempt.'],
  ['paused', 'Schedule paused.'],
  ['resumed', 'Schedule resumed.'],
]);
const JOB_DONE = new Map([['cancel', 'cancelled'], ['reschedule', 'rescheduled'], ['retry', 'retried']]);
const PAGE_SIZE = '50';
const TENANTS_PAGE = 50;
/**
 * Jobs counted per tenant on the operator's list: 50 tenants a page, each count a walk of up to
 * one past this many index entries, so a page reads at most ~500,000 (shown as "10,000+").
 */
const TENANT_JOBS_CAP = 10_000;
const NEXT_RUNS_SHOWN = 3;
/** A schedule page's strip of runs (issue 34: the last 30). */
const RUNS_SHOWN = 30;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
/**
 * A schedule list's cursor, checked by the rule GET /v1/schedules uses, so a pause or resume
 * returns to the page it was made from; else undefined.
 */
const scheduleCursor = (v: unknown): string | undefined => (typeof v === 'string' && decodeScheduleCursor(v) !== null ? v : undefined);
const notice = (v: unknown): string | undefined => (typeof v === 'string' ? NOTICES.get(v) : undefined);

/**
 * The console (/console): server-rendered pages over the same services the JSON API uses, so a
 * rule (tenant scoping, what may be cancelled, validation) has one home and the console cannot
 * drift from it. Read views use the API's bounded, indexed queries; pages and forms spend the
 * tenant's request budget as its API requests do.
 */
@ApiExcludeController()
@UseFilters(ConsoleExceptionFilter)
@Controller('console')
export class ConsoleController {
  constructor(
    private readonly pages: ConsolePages,
    private readonly session: ConsoleSession,
    private readonly overview: ConsoleOverviewService,
    private readonly queries: JobQueriesService,
    private readonly changes: JobChangesService,
    private readonly schedules: SchedulesService,
    private readonly runs: ScheduleRunsService,
    private readonly tenants: TenantsRepository,
    private readonly clock: Clock,
  ) {}

  @Get()
  async home(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: PageQuery, @RequestOver() over: AbortSignal): Promise<void> {
    await this.pages.show(req, reply, q, async (v) => {
      const data = await this.overview.read(v.tenant, this.clock.now(), over);
      return { title: 'Overview', section: 'overview', content: overviewView(v, data) };
    }, { cost: OVERVIEW_READ_COST, operatorHome: true });
  }

  @Get('tenants')
  async tenantList(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: PageQuery, @RequestOver() over: AbortSignal): Promise<void> {
    const viewer = await this.session.viewer(req, reply, undefined);
    if (!viewer) return;
    if (viewer.role !== 'admin') return this.pages.render(reply, viewer, { title: 'Not found', status: 404, error: 'Only the operator sees the tenant list.', content: html`` });
    const after = typeof q.after === 'string' && /^[0-9]{1,9}$/.test(q.after) ? Number(q.after) : 0; // ids are int4
    const rows = await this.tenants.list(after, TENANTS_PAGE, TENANT_JOBS_CAP + 1, over);
    const next = rows.length === TENANTS_PAGE ? String(rows[rows.length - 1].id) : null;
    const content = tenantsView(rows.map((t) => ({ tenant: t, keys: t.keys, jobs: t.jobs })), TENANT_JOBS_CAP, next);
    this.pages.render(reply, viewer, { title: 'Tenants', section: 'tenants', content });
  }

  @Get('jobs')
  async jobs(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: PageQuery, @RequestOver() over: AbortSignal): Promise<void> {
    const f: JobFilterForm = { key: str(q.key), kind: str(q.kind), state: str(q.state), from: str(q.from), to: str(q.to) };
    const now = this.clock.now();
    await this.pages.show(req, reply, q, async (v) => {
      if (f.key) {
        const found = (await this.queries.search(v.tenant, { key: f.key }, over)) as JobDetailView; // with a key: the one job
        return { redirect: consoleHref(v, `/jobs/${found.id}`) };
      }
      const query: PageQuery = { limit: PAGE_SIZE };
      if (f.kind) query.kind = f.kind;
      if (f.state) query.state = f.state;
      if (f.from) query.from = asUtcIfZoneless(f.from);
      if (f.to) query.to = asUtcIfZoneless(f.to);
      if (str(q.cursor)) query.cursor = q.cursor;
      const { items, nextCursor } = (await this.queries.search(v.tenant, query, over)) as { items: JobRow[]; nextCursor: string | null };
      return { title: 'Jobs', section: 'jobs', content: jobsView(v, f, items, nextCursor, now, query.cursor !== undefined) };
    }, { onError: (v) => jobsView(v, f, [], null, now, false) });
  }

  @Get('jobs/:id')
  async job(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: PageQuery, @Param('id') id: string, @RequestOver() over: AbortSignal): Promise<void> {
    await this.pages.show(req, reply, q, async (v) => {
      const job = await this.queries.get(v.tenant, id, {}, over);
      const from = str(q.attempts);
      if (from === undefined) return { title: `Job ${job.key}`, section: 'jobs', content: jobView(v, job, this.clock.now(), { from: null, older: job.historyNext }), notice: notice(q.done) };
      // An older page of its attempts (the API's cursor): a job has up to 10,000 of them.
      const page = await this.queries.attemptPage(v.tenant, id, { cursor: from }, over).catch((err: unknown) => {
        // The page's `attempts` is the API's cursor: a refusal names the parameter in this URL.
        if (err instanceof ApiError && err.details.some((d) => d.field === 'cursor')) {
          throw invalid([{ field: 'attempts', rule: 'format', message: 'attempts is not a page of attempts this console linked to' }]);
        }
        throw err;
      });
      const older = { ...job, history: [...page.items].reverse() };
      return { title: `Job ${job.key}`, section: 'jobs', content: jobView(v, older, this.clock.now(), { from, older: page.nextCursor }) };
    });
  }

  @Post('jobs/:id/:verb')
  async jobAction(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Body() form: Form, @Param('id') id: string, @Param('verb') verb: string): Promise<void> {
    await this.pages.act(req, reply, form, async (v) => {
      if (verb === 'cancel') await this.changes.cancel(v.tenant, id);
      else if (verb === 'reschedule') await this.changes.reschedule(v.tenant, id, { runAt: asUtcIfZoneless(str(form?.runAt) ?? '') });
      else if (verb === 'retry') await this.changes.retry(v.tenant, id, undefined);
      else return null;
      return consoleHref(v, `/jobs/${id}`, { done: JOB_DONE.get(verb) });
    }, async (v) => {
      const job = await this.queries.get(v.tenant, id);
      return { title: `Job ${job.key}`, section: 'jobs', content: jobView(v, job, this.clock.now(), { from: null, older: job.historyNext }) };
    });
  }

  @Get('schedules')
  async scheduleList(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: PageQuery, @RequestOver() over: AbortSignal): Promise<void> {
    await this.pages.show(req, reply, q, async (v) => {
      const cursor = str(q.cursor);
      const list = await this.schedules.list(v.tenant, cursor ? { limit: PAGE_SIZE, cursor } : { limit: PAGE_SIZE }, over);
      const rows = list.items.map((s) => ({ ...s, nextLocal: s.paused ? [] : this.schedules.nextRunsLocal(s, NEXT_RUNS_SHOWN) }));
      return { title: 'Schedules', section: 'schedules', content: schedulesView(v, rows, list.nextCursor, cursor), notice: notice(q.done) };
    });
  }

  @Get('schedules/:id')
  async schedule(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: PageQuery, @Param('id') id: string, @RequestOver() over: AbortSignal): Promise<void> {
    await this.pages.show(req, reply, q, async (v) => {
      const { schedule, runs } = await this.runs.recent(v.tenant, id, RUNS_SHOWN, over);
      const next = schedule.paused ? [] : this.schedules.nextRunsLocal(schedule, NEXT_RUNS_SHOWN);
      return { title: `Schedule ${schedule.key}`, section: 'schedules', content: scheduleView(v, schedule, runs, next, this.clock.now()) };
    });
  }

  @Post('schedules/:id/:verb')
  async scheduleAction(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Body() form: Form, @Param('id') id: string, @Param('verb') verb: string): Promise<void> {
    await this.pages.act(req, reply, form, async (v) => {
      if (verb !== 'pause' && verb !== 'resume') return null;
      await this.schedules.setPaused(v.tenant, id, verb === 'pause');
      return consoleHref(v, '/schedules', { cursor: scheduleCursor(form?.cursor), done: verb === 'pause' ? 'paused' : 'resumed' });
    });
  }
}
