import type { TenantRecord } from '@almanac/persistence';
import { ALMANAC_CONFIG, type AlmanacConfig, Clock } from '@almanac/platform';
import { CanActivate, createParamDecorator, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError, overLimit } from '../http/api-error';
import { TokenBuckets } from '../rate-limit/token-bucket';
import { TenantAuthService } from './tenant-auth.service';
import { sourceOf } from './source-address';

export type AuthedRequest = FastifyRequest & { tenant?: TenantRecord };

export function bearerToken(req: FastifyRequest): string | null {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

export function unauthorized(message: string): ApiError {
  return new ApiError(401, message, [{ field: 'authorization', rule: 'bearer', message }], {
    'WWW-Authenticate': 'Bearer',
  });
}

/** A suspended tenant's key is valid but refused: 403, so its client stops retrying and shows why. */
export function suspended(): ApiError {
  const message = 'this tenant is suspended; its jobs are held until an operator enables it again';
  return new ApiError(403, message, [{ field: 'authorization', rule: 'suspended', message }]);
}

/** Every tenant route: `Authorization: Bearer <tenant api key>`. */
@Injectable()
export class TenantAuthGuard implements CanActivate {
  constructor(private readonly auth: TenantAuthService) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    if (!req.tenant) await this.authenticate(req); // EarlyAuthHook may have done it already
    return true;
  }

  /** Sets `req.tenant`, or throws 401 (503 when key lookups are over their rate). */
  async authenticate(req: AuthedRequest): Promise<void> {
    const key = bearerToken(req);
    if (!key) throw unauthorized('missing bearer token (Authorization: Bearer <api key>)');
    const tenant = await this.auth.authenticate(key, () => sourceOf(req));
    if (!tenant) throw unauthorized('unknown api key');
    if (tenant.disabled) throw suspended();
    req.tenant = tenant;
  }
}

/**
 * Wrong admin tokens a source address may send: ADMIN_FAILURES at once, then one per
 * ADMIN_FAILURE_REFILL_MS. Past them every admin request from that address is 429 (and the
 * console takes the admin token from it as unknown) until the bucket refills, whatever its token,
 * so a guess that matches cannot be told from one that does not. Per API replica, keyed by the
 * request's source (sourceOf).
 */
export const ADMIN_FAILURES = 10;
const ADMIN_FAILURE_REFILL_MS = 6_000;
/** Addresses with failures remembered at once (oldest forgotten first). */
const ADMIN_FAILURE_KEYS = 10_000;
/** Wrong secrets remembered per address: more than it may send before it is locked out. */
const WRONG_SECRETS_KEPT = 2 * ADMIN_FAILURES;

/** The wrong admin tokens per address, one per API process: Nest makes a guard per module. */
@Injectable()
export class AdminAttempts {
  readonly failures = new TokenBuckets(ADMIN_FAILURE_KEYS);
  /**
   * The wrong secrets counted per address (its newest WRONG_SECRETS_KEPT digests), as many
   * addresses as `failures` keeps, the oldest forgotten first. The same wrong secret again (a
   * console cookie whose key was revoked or whose admin token was rotated, a script still sending
   * an old token) tells a guesser nothing new: counting every resend locked out everyone behind the
   * address (all users, behind a proxy) with no attacker involved. Per address, so other
   * addresses' guesses cannot push an address's out and have its resends count again.
   */
  readonly counted = new Map<string, string[]>();
}

/** Admin routes: the configured ALMANAC_ADMIN_TOKEN, compared in constant time, with an attempt limit. */
@Injectable()
export class AdminAuthGuard implements CanActivate {
  private readonly expected: Buffer;
  private readonly failures: TokenBuckets;

  constructor(
    @Inject(ALMANAC_CONFIG) config: AlmanacConfig,
    private readonly clock: Clock,
    private readonly attempts: AdminAttempts,
  ) {
    this.failures = attempts.failures;
    this.expected = digest(config.adminToken);
  }

  canActivate(ctx: ExecutionContext): boolean {
    this.check(ctx.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }

  check(req: FastifyRequest): void {
    const retryAfterMs = this.lockedOut(req);
    if (retryAfterMs !== null) throw overLimit(429, 'too many wrong admin tokens from this address', 'authorization', 'admin_attempts', retryAfterMs);
    const token = bearerToken(req);
    if (token && this.matches(token)) return;
    this.recordFailure(req, token ?? '');
    throw unauthorized('admin token required');
  }

  /** How long until this request's address may try the admin token again, or null when it may now. */
  lockedOut(req: FastifyRequest): number | null {
    const left = this.failures.peek(sourceOf(req), 1, 1000 / ADMIN_FAILURE_REFILL_MS, ADMIN_FAILURES, this.clock.now().getTime());
    return left.ok ? null : left.retryAfterMs;
  }

  /**
   * A wrong admin token from this request's address (the console counts secrets that are neither
   * key nor token), counted once per address however often it comes again.
   */
  recordFailure(req: FastifyRequest, secret: string): void {
    const source = sourceOf(req);
    const guess = digest(secret).toString('base64');
    const counted = this.attempts.counted;
    const seen = counted.get(source) ?? [];
    counted.delete(source); // set again as the newest
    if (seen.includes(guess) || this.failures.take(source, 1, 1000 / ADMIN_FAILURE_REFILL_MS, ADMIN_FAILURES, this.clock.now().getTime()).ok) {
      counted.set(source, seen.includes(guess) ? seen : [...seen, guess].slice(-WRONG_SECRETS_KEPT));
    } else if (seen.length > 0) counted.set(source, seen);
    if (counted.size > ADMIN_FAILURE_KEYS) counted.delete(counted.keys().next().value as string);
  }

  /** Whether `token` is the admin token (the console's sign-in asks this of a form field). */
  matches(token: string): boolean {
    // Hashing both sides gives equal lengths, so timingSafeEqual leaks nothing about the token.
    return timingSafeEqual(digest(token), this.expected);
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** The authenticated tenant (set by TenantAuthGuard). */
export const CurrentTenant = createParamDecorator((_: unknown, ctx: ExecutionContext): TenantRecord => {
  const tenant = ctx.switchToHttp().getRequest<AuthedRequest>().tenant;
  if (!tenant) throw unauthorized('not authenticated');
  return tenant;
});
