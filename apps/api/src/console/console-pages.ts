import { RequestRateLimiter } from '../rate-limit/request-rate-limiter';
import { RequestsInFlight } from '../rate-limit/requests-in-flight';
import type { Release } from '../rate-limit/tenant-slots';
import type { TimedRequest } from '../http/request-clock';
import { requestOver } from '../http/request-deadline.interceptor';
import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ASSET_URLS } from './console-assets';
import { describeFailure, redirect, sameOrigin, sendHtml } from './console-http';
import { ConsoleSession } from './console-session';
import { type ConsoleViewer, CONSOLE_PATH, type TenantViewer } from './console-viewer';
import { html, type SafeHtml } from './views/html';
import { page, type PageOptions } from './views/layout';

export type PageQuery = Record<string, unknown>;
export type Form = Record<string, unknown> | undefined;
/** A page to draw: its title, the nav section it is under, its content, and how it answers. */
export interface Shown {
  title: string;
  section?: PageOptions['section'];
  content: SafeHtml;
  status?: number;
  error?: string;
  notice?: string;
  headers?: Record<string, string>;
}

/**
 * The frame every console page and form shares: who is signed in, which tenant, the tenant's
 * request budget, the API's refusals shown on the page, and the HTML answer.
 */
@Injectable()
export class ConsolePages {
  constructor(
    private readonly session: ConsoleSession,
    private readonly requests: RequestRateLimiter,
    private readonly inFlight: RequestsInFlight,
  ) {}

  /**
   * A read page: signed in, a tenant chosen, its request budget spent (a tenant's own pages only:
   * the operator's are not counted against the tenant), the API's refusals shown as the page's
   * error above what `onError` draws.
   */
  async show(
    req: FastifyRequest,
    reply: FastifyReply,
    q: PageQuery,
    build: (v: TenantViewer) => Promise<Shown | { redirect: string }>,
    o: { cost?: number; operatorHome?: boolean; onError?: (v: TenantViewer) => SafeHtml } = {},
  ): Promise<void> {
    const viewer = await this.session.viewer(req, reply, q.tenant);
    if (!viewer) return;
    if (!viewer.tenant) {
      if (o.operatorHome && q.tenant === undefined) return redirect(reply, `${CONSOLE_PATH}/tenants`);
      return this.render(reply, viewer, { title: 'Not found', status: 404, error: 'No such tenant.', content: html`` });
    }
    const v = viewer as TenantViewer;
    let release: Release | undefined;
    try {
      if (v.role === 'tenant') release = await this.spend(req, reply, v.tenant.id, o.cost ?? 1);
      const shown = await build(v);
      if ('redirect' in shown) return redirect(reply, shown.redirect);
      this.render(reply, v, shown);
    } catch (err) {
      const failure = describeFailure(err);
      if (!failure) throw err;
      this.render(reply, v, { title: failure.status === 404 ? 'Not found' : 'Error', status: failure.status, error: failure.message, headers: failure.headers, content: o.onError?.(v) ?? html`` });
    } finally {
      release?.();
    }
  }

  /** A form post: same origin, signed in, its request budget spent, then the action and a redirect, or the page again with the refusal. */
  async act(
    req: FastifyRequest,
    reply: FastifyReply,
    form: Form,
    run: (v: TenantViewer) => Promise<string | null>,
    again?: (v: TenantViewer) => Promise<Shown>,
  ): Promise<void> {
    const viewer = await this.session.viewer(req, reply, form?.tenant);
    if (!viewer) return;
    if (!sameOrigin(req)) return this.render(reply, viewer, { title: 'Refused', status: 403, error: 'This form was posted from another site.', content: html`` });
    if (!viewer.tenant) return this.render(reply, viewer, { title: 'Not found', status: 404, error: 'No such tenant.', content: html`` });
    const v = viewer as TenantViewer;
    let release: Release | undefined;
    try {
      if (v.role === 'tenant') release = await this.spend(req, reply, v.tenant.id, 1); // as the API's cancel or pause would
      const to = await run(v);
      if (to === null) return this.render(reply, v, { title: 'Not found', status: 404, error: 'No such action.', content: html`` });
      redirect(reply, to);
    } catch (err) {
      const failure = describeFailure(err);
      if (!failure) throw err;
      // Over its budget, or answered at its deadline already, the page is not read again either.
      const readAgain = again && failure.status !== 404 && failure.status !== 429 && !(req as TimedRequest).deadline?.aborted;
      const shown = readAgain ? await again(v).catch(() => null) : null;
      this.render(reply, v, { ...(shown ?? { title: 'Error', content: html`` }), status: failure.status, error: failure.message, headers: failure.headers });
    } finally {
      release?.();
    }
  }

  /** A tenant's page or form spends its request budget and holds one of its requests in flight, as its API requests do. */
  private async spend(req: TimedRequest, reply: FastifyReply, tenantId: number, cost: number): Promise<Release> {
    await this.requests.take(tenantId, cost);
    return this.inFlight.hold(tenantId, requestOver(req, reply));
  }

  render(reply: FastifyReply, viewer: ConsoleViewer, s: Shown): void {
    const options = { title: s.title, viewer, section: s.section, notice: s.notice, error: s.error, assets: ASSET_URLS };
    sendHtml(reply, s.status ?? 200, page(options, s.content), s.headers);
  }
}
