import { TenantsRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, type AlmanacConfig, listenerOf } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { API_SETTINGS, type ApiSettings } from '../api-settings';
import { AdminAuthGuard } from '../auth/guards';
import { TenantAuthService } from '../auth/tenant-auth.service';
import { sourceOf } from '../auth/source-address';
import { redirect } from './console-http';
import { type ConsoleViewer, CONSOLE_PATH } from './console-viewer';

/** The cookie that carries the signed-in secret; sent by the browser only to /console. */
export const SESSION_COOKIE = 'almanac_console';

/**
 * Why a secret did not sign in (the sign-in page says which). `locked`: the address is past its
 * wrong admin tokens, so whether this one is the admin token is not said (a tenant key still is).
 */
export type SignInRefusal = 'unknown' | 'suspended' | 'locked';

/** What the sign-in page tells a viewer sent back to it, by a fixed word (never text from the request). */
export const SENT_BACK = new Map<string, string>([
  ['ended', 'Your session no longer signs in here: its key was revoked, or the admin token changed. Sign in again.'],
  ['suspended', 'This tenant is suspended; an operator can enable it again.'],
  ['locked', 'Too many wrong secrets from this address: the admin token signs in again in a minute. A tenant API key still does.'],
]);

/** Tenant ids are int4: a larger `tenant=` names no tenant rather than failing the query. */
const MAX_TENANT_ID = 2_147_483_647;

function readCookie(req: FastifyRequest, name: string): string | null {
  const header = req.headers.cookie;
  if (typeof header !== 'string') return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return null;
      }
    }
  }
  return null;
}

/**
 * The console's sign-in. The secret itself (a tenant API key or the admin token) is the
 * session: kept in an HttpOnly, SameSite=Lax, Secure cookie scoped to /console, so no script on
 * the page can read it, no other site's form post carries it (posts also check Origin), and the
 * API's own routes never see it. Each request resolves it exactly as the API resolves a bearer
 * key (TenantAuthService: cached, revocations and suspensions honoured at once), so signing in
 * adds no second kind of credential to rotate or leak. Where ALMANAC_ADMIN_PORT separates the
 * admin routes, the admin token signs in only there, as the admin API answers only there.
 */
@Injectable()
export class ConsoleSession {
  constructor(
    private readonly auth: TenantAuthService,
    private readonly admin: AdminAuthGuard,
    private readonly tenants: TenantsRepository,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
  ) {}

  /** The viewer this secret signs in as on this request's port, or why it does not. */
  async resolve(secret: string, req: FastifyRequest): Promise<ConsoleViewer | SignInRefusal> {
    if (secret.length === 0 || secret.length > 512) return 'unknown';
    const tenant = await this.auth.authenticate(secret, () => sourceOf(req));
    if (tenant) return tenant.disabled ? 'suspended' : { role: 'tenant', tenant };
    // Under the admin token's attempt limit, and after the lookup's wait: looked at, compared and
    // counted in one go, so sign-ins sent together are each counted before the next is compared
    // (compared before the wait, any number of them were). A locked-out address's is not compared.
    if (this.admin.lockedOut(req) !== null) {
      this.admin.recordFailure(req, secret);
      return 'locked';
    }
    if (this.admin.matches(secret)) return this.adminAllowed(req) ? { role: 'admin', tenant: null } : 'unknown';
    this.admin.recordFailure(req, secret);
    return 'unknown';
  }

  /**
   * The viewer of a request, or null when it is not signed in, having sent it to sign in. A
   * session whose secret no longer signs in (a revoked key, a rotated admin token) ends there,
   * so the browser stops sending it; but not on the API port when the admin routes have their
   * own, as cookies ignore ports and it may be the admin port's session. The operator's `tenant`
   * query parameter picks the tenant it looks at; unknown ids show none.
   */
  async viewer(req: FastifyRequest, reply: FastifyReply, tenantParam: unknown): Promise<ConsoleViewer | null> {
    const secret = readCookie(req, SESSION_COOKIE);
    const viewer = secret ? await this.resolve(secret, req) : null;
    if (viewer === null || typeof viewer === 'string') {
      const why = viewer === 'unknown' ? 'ended' : viewer;
      if (why === 'ended' && this.adminAllowed(req)) this.end(reply);
      redirect(reply, `${CONSOLE_PATH}/sign-in${why ? `?why=${why}` : ''}`);
      return null;
    }
    if (viewer.role === 'admin' && typeof tenantParam === 'string' && /^[1-9][0-9]{0,9}$/.test(tenantParam)) {
      const id = Number(tenantParam);
      return { role: 'admin', tenant: id <= MAX_TENANT_ID ? await this.tenants.findById(id) : null };
    }
    return viewer;
  }

  start(reply: FastifyReply, secret: string): void {
    void reply.header('Set-Cookie', `${SESSION_COOKIE}=${encodeURIComponent(secret)}; ${this.attributes()}`);
  }

  end(reply: FastifyReply): void {
    void reply.header('Set-Cookie', `${SESSION_COOKIE}=; Max-Age=0; ${this.attributes()}`);
  }

  private adminAllowed(req: FastifyRequest): boolean {
    return this.config.adminPort === undefined || listenerOf(req) === 'admin';
  }

  /**
   * No Max-Age: the session ends with the browser. Lax, not Strict: a link to a job from chat or
   * a dashboard opens it signed in (GETs change nothing; posts are Origin-checked). Secure
   * unless ALMANAC_CONSOLE_SECURE_COOKIE=false, whatever the request says: Almanac cannot see
   * the TLS its proxy ends, and a Host header is the client's (or the proxy's) to choose, so a
   * proxy that sends its own `Host: localhost` must not cost production cookies their Secure.
   * Chromium keeps a Secure cookie set over http://localhost and http://127.0.0.1, so a
   * developer's console works there without the setting; `npm start` turns it off all the same.
   */
  private attributes(): string {
    const secure = this.settings.consoleSecureCookie;
    return `Path=${CONSOLE_PATH}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
  }
}
