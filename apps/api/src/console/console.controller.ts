import { asUtcIfZoneless } from '@almanac/domain';
import { TenantsRepository } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { Body, Controller, Get, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid } from '../http/api-error';
import { JobChangesService } from '../jobs/job-changes.service';
import { JobQueriesService } from '../jobs/job-queries.service';
import { RequestRateLimiter } from '../rate-limit/request-rate-limiter';
import { decodeScheduleCursor } from '../schedules/schedule-cursor';
import { ScheduleRunsService } from '../schedules/schedule-runs.service';
import { SchedulesService } from '../schedules/schedules.service';
import { ASSET_URLS, CONSOLE_ASSETS } from './console-assets';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { describeFailure, redirect, sameOrigin, sendHtml } from './console-http';
import { ConsoleOverviewService, OVERVIEW_READ_COST } from './console-overview.service';
import { ConsoleSession } from './console-session';
import { type ConsoleViewer, consoleHref, CONSOLE_PATH, type TenantViewer } from './console-viewer';
import { html, type SafeHtml } from './views/html';
import { jobView, type JobDetailView } from './views/job.view';
import { type JobFilterForm, type JobRow, jobsView } from './views/jobs.view';
import { page, type PageOptions } from './views/layout';
import { overviewView } from './views/overview.view';
import { scheduleView } from './views/schedule.view';
import { schedulesView } from './views/schedules.view';
import { signInView } from './views/sign-in.view';
import { tenantsView } from './views/tenants.view';

type Query = Record<string, unknown>;
type Form = Record<string, unknown> | undefined;
interface Shown {
  title: string;
  section?: PageOptions['section'];
  content: SafeHtml;
  status?: number;
  error?: string;
  notice?: string;
  headers?: Record<string, string>;
}

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
    private readonly session: ConsoleSession,
    private readonly overview: ConsoleOverviewService,
    private readonly queries: JobQueriesService,
    private readonly changes: JobChangesService,
    private readonly schedules: SchedulesService,
    private readonly runs: ScheduleRunsService,
    private readonly tenants: TenantsRepository,
    private readonly requests: RequestRateLimiter,
    private readonly clock: Clock,
  ) {}

  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() reply: FastifyReply): void {
    const asset = CONSOLE_ASSETS.get(file);
    if (!asset) return void reply.status(404).send({ statusCode: 404, error: 'Not Found', message: 'no such asset' });
    void reply.headers({ 'content-type': asset.contentType, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' }).send(asset.body);
  }

  @Get('sign-in')
  signInPage(@Res() reply: FastifyReply): void {
    sendHtml(reply, 200, page({ title: 'Sign in', viewer: null, assets: ASSET_URLS }, signInView()));
  }

  @Post('sign-in')
  async signIn(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Body() form: Form): Promise<void> {
    const refuse = (status: number, error: string) => sendHtml(reply, status, page({ title: 'Sign in', viewer: null, assets: ASSET_URLS, error }, signInView()));
    if (!sameOrigin(req)) return refuse(403, 'This form was posted from another site.');
    const secret = typeof form?.token === 'string' ? form.token.trim() : '';
    const viewer = await this.session.resolve(secret, req);
    if (viewer === 'unknown') return refuse(401, 'That is neither a tenant API key nor the admin token.');
    if (viewer === 'suspended') return refuse(403, 'This tenant is suspended; an operator can enable it again.');
    this.session.start(reply, secret);
    redirect(reply, viewer.role === 'admin' ? `${CONSOLE_PATH}/tenants` : CONSOLE_PATH);
  }

  @Post('sign-out')
  signOut(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    if (!sameOrigin(req)) return sendHtml(reply, 403, page({ title: 'Refused', viewer: null, assets: ASSET_URLS, error: 'This form was posted from another site.' }, html``));
    this.session.end(reply);
    redirect(reply, `${CONSOLE_PATH}/sign-in`);
  }

  @Get()
  async home(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: Query): Promise<void> {
    await this.show(req, reply, q, async (v) => {
      const data = await this.overview.read(v.tenant, this.clock.now());
      return { title: 'Overview', section: 'overview', content: overviewView(v, data) };
    }, { cost: OVERVIEW_READ_COST, operatorHome: true });
  }

  @Get('tenants')
  async tenantList(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: Query): Promise<void> {
    const viewer = await this.session.viewer(req, undefined);
    if (!viewer) return redirect(reply, `${CONSOLE_PATH}/sign-in`);
    if (viewer.role !== 'admin') return this.render(reply, viewer, { title: 'Not found', status: 404, error: 'Only the operator sees the tenant list.', content: html`` });
    const after = typeof q.after === 'string' && /^[0-9]{1,9}$/.test(q.after) ? Number(q.after) : 0; // ids are int4
    const rows = await this.tenants.list(after, TENANTS_PAGE, TENANT_JOBS_CAP + 1);
    const next = rows.length === TENANTS_PAGE ? String(rows[rows.length - 1].id) : null;
    const content = tenantsView(rows.map((t) => ({ tenant: t, keys: t.keys, jobs: t.jobs })), TENANT_JOBS_CAP, next);
    this.render(reply, viewer, { title: 'Tenants', section: 'tenants', content });
  }

  @Get('jobs')
  async jobs(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: Query): Promise<void> {
    const f: JobFilterForm = { key: str(q.key), kind: str(q.kind), state: str(q.state), from: str(q.from), to: str(q.to) };
    const now = this.clock.now();
    await this.show(req, reply, q, async (v) => {
      if (f.key) {
        const found = (await this.queries.search(v.tenant, { key: f.key })) as JobDetailView; // with a key: the one job
        return { redirect: consoleHref(v, `/jobs/${found.id}`) };
      }
      const query: Query = { limit: PAGE_SIZE };
      if (f.kind) query.kind = f.kind;
      if (f.state) query.state = f.state;
      if (f.from) query.from = asUtcIfZoneless(f.from);
      if (f.to) query.to = asUtcIfZoneless(f.to);
      if (str(q.cursor)) query.cursor = q.cursor;
      const { items, nextCursor } = (await this.queries.search(v.tenant, query)) as { items: JobRow[]; nextCursor: string | null };
      return { title: 'Jobs', section: 'jobs', content: jobsView(v, f, items, nextCursor, now, query.cursor !== undefined) };
    }, { onError: (v) => jobsView(v, f, [], null, now, false) });
  }

  @Get('jobs/:id')
  async job(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: Query, @Param('id') id: string): Promise<void> {
    await this.show(req, reply, q, async (v) => {
      const job = await this.queries.get(v.tenant, id);
      const from = str(q.attempts);
      if (from === undefined) return { title: `Job ${job.key}`, section: 'jobs', content: jobView(v, job, this.clock.now(), { from: null, older: job.historyNext }), notice: notice(q.done) };
      // An older page of its attempts (the API's cursor): a job has up to 10,000 of them.
      const page = await this.queries.attemptPage(v.tenant, id, { cursor: from }).catch((err: unknown) => {
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
    await this.act(req, reply, form, async (v) => {
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
  async scheduleList(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: Query): Promise<void> {
    await this.show(req, reply, q, async (v) => {
      const cursor = str(q.cursor);
      const list = await this.schedules.list(v.tenant, cursor ? { limit: PAGE_SIZE, cursor } : { limit: PAGE_SIZE });
      const rows = list.items.map((s) => ({ ...s, nextLocal: s.paused ? [] : this.schedules.nextRunsLocal(s, NEXT_RUNS_SHOWN) }));
      return { title: 'Schedules', section: 'schedules', content: schedulesView(v, rows, list.nextCursor, cursor), notice: notice(q.done) };
    });
  }

  @Get('schedules/:id')
  async schedule(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: Query, @Param('id') id: string): Promise<void> {
    await this.show(req, reply, q, async (v) => {
      const { schedule, runs } = await this.runs.recent(v.tenant, id, RUNS_SHOWN);
      const next = schedule.paused ? [] : this.schedules.nextRunsLocal(schedule, NEXT_RUNS_SHOWN);
      return { title: `Schedule ${schedule.key}`, section: 'schedules', content: scheduleView(v, schedule, runs, next, this.clock.now()) };
    });
  }

  @Post('schedules/:id/:verb')
  async scheduleAction(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Body() form: Form, @Param('id') id: string, @Param('verb') verb: string): Promise<void> {
    await this.act(req, reply, form, async (v) => {
      if (verb !== 'pause' && verb !== 'resume') return null;
      await this.schedules.setPaused(v.tenant, id, verb === 'pause');
      return consoleHref(v, '/schedules', { cursor: scheduleCursor(form?.cursor), done: verb === 'pause' ? 'paused' : 'resumed' });
    });
  }

  /**
   * A read page: signed in, a tenant chosen, its request budget spent (a tenant's own pages only:
   * the operator's are not counted against the tenant), the API's refusals shown as the page's
   * error above what `onError` draws.
   */
  private async show(
    req: FastifyRequest,
    reply: FastifyReply,
    q: Query,
    build: (v: TenantViewer) => Promise<Shown | { redirect: string }>,
    o: { cost?: number; operatorHome?: boolean; onError?: (v: TenantViewer) => SafeHtml } = {},
  ): Promise<void> {
    const viewer = await this.session.viewer(req, q.tenant);
    if (!viewer) return redirect(reply, `${CONSOLE_PATH}/sign-in`);
    if (!viewer.tenant) {
      if (o.operatorHome && q.tenant === undefined) return redirect(reply, `${CONSOLE_PATH}/tenants`);
      return this.render(reply, viewer, { title: 'Not found', status: 404, error: 'No such tenant.', content: html`` });
    }
    const v = viewer as TenantViewer;
    try {
      if (v.role === 'tenant') await this.requests.take(v.tenant.id, o.cost ?? 1);
      const shown = await build(v);
      if ('redirect' in shown) return redirect(reply, shown.redirect);
      this.render(reply, v, shown);
    } catch (err) {
      const failure = describeFailure(err);
      if (!failure) throw err;
      this.render(reply, v, { title: failure.status === 404 ? 'Not found' : 'Error', status: failure.status, error: failure.message, headers: failure.headers, content: o.onError?.(v) ?? html`` });
    }
  }

  /** A form post: same origin, signed in, its request budget spent, then the action and a redirect, or the page again with the refusal. */
  private async act(
    req: FastifyRequest,
    reply: FastifyReply,
    form: Form,
    run: (v: TenantViewer) => Promise<string | null>,
    again?: (v: TenantViewer) => Promise<Shown>,
  ): Promise<void> {
    const viewer = await this.session.viewer(req, form?.tenant);
    if (!viewer) return redirect(reply, `${CONSOLE_PATH}/sign-in`);
    if (!sameOrigin(req)) return this.render(reply, viewer, { title: 'Refused', status: 403, error: 'This form was posted from another site.', content: html`` });
    if (!viewer.tenant) return this.render(reply, viewer, { title: 'Not found', status: 404, error: 'No such tenant.', content: html`` });
    const v = viewer as TenantViewer;
    try {
      if (v.role === 'tenant') await this.requests.take(v.tenant.id, 1); // as the API's cancel or pause would
      const to = await run(v);
      if (to === null) return this.render(reply, v, { title: 'Not found', status: 404, error: 'No such action.', content: html`` });
      redirect(reply, to);
    } catch (err) {
      const failure = describeFailure(err);
      if (!failure) throw err;
      // Over its budget, the page is not read again either.
      const shown = again && failure.status !== 404 && failure.status !== 429 ? await again(v).catch(() => null) : null;
      this.render(reply, v, { ...(shown ?? { title: 'Error', content: html`` }), status: failure.status, error: failure.message, headers: failure.headers });
    }
  }

  private render(reply: FastifyReply, viewer: ConsoleViewer, s: Shown): void {
    const options = { title: s.title, viewer, section: s.section, notice: s.notice, error: s.error, assets: ASSET_URLS };
    sendHtml(reply, s.status ?? 200, page(options, s.content), s.headers);
  }
}
