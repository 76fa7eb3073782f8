import { isTransientDependencyError } from '@almanac/platform';
import { DomainValidationError } from '@almanac/domain';
import { ALMANAC_CONFIG, type AlmanacConfig } from '@almanac/platform';
import type { TenantRecord } from '@almanac/persistence';
import { ArgumentsHost, Catch, HttpException, Inject } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import { BaseExceptionFilter } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ErrorBody, reasonPhrase } from './api-error';
import { IngestRateLimiter } from '../rate-limit/ingest-rate-limiter';
import { isIngestRoute, RequestRateLimiter } from '../rate-limit/request-rate-limiter';
import { expectedFailure } from './expected-failure';

/**
 * Shapes every error on the API's routes as `{statusCode, error, message, details}`; other
 * routes (health, metrics of co-hosted roles) keep Nest's default handling. Fastify's body errors
 * (malformed JSON, oversize body, wrong content type) arrive here too, before any controller runs;
 * for an authenticated tenant (EarlyAuthHook) such a body spends one of its route's budget, as a
 * request the route refused would: otherwise a tenant could have 4 MiB bodies parsed for nothing.
 */
@Catch()
export class ApiExceptionFilter extends BaseExceptionFilter {
  @InjectPinoLogger('api-errors') private readonly log!: PinoLogger;
  @Inject(ALMANAC_CONFIG) private readonly config!: AlmanacConfig;
  @Inject(RequestRateLimiter) private readonly requests!: RequestRateLimiter;
  @Inject(IngestRateLimiter) private readonly ingest!: IngestRateLimiter;

  override catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<FastifyRequest>();
    const res = ctx.getResponse<FastifyReply>();
    const path = req.url.split('?', 1)[0];
    if (!isApiPath(path)) return super.catch(exception, host);
    const answer = this.toBody(exception, req.method, path);
    const tenant = (req as FastifyRequest & { tenant?: TenantRecord }).tenant;
    if (!tenant || !this.isBodyError(exception)) return this.send(res, answer);
    // The parser ran before the route could spend: spend here, and answer 429 once it is gone.
    const spent = isIngestRoute(req) ? this.ingest.consume(tenant, 1) : this.requests.take(tenant.id, 1);
    spent.then(
      () => this.send(res, answer),
      (err: unknown) => this.send(res, err instanceof ApiError ? { body: err.body, headers: err.headers } : answer),
    );
  }

  private send(res: FastifyReply, { body, headers }: { body: ErrorBody; headers: Record<string, string> }): void {
    if (res.sent) return;
    res.headers(headers).status(body.statusCode).send(body);
  }

  /** Fastify's own refusal of a request's body (see bodyError), maybe wrapped by Nest. */
  private isBodyError(exception: unknown): boolean {
    return (bodyError(exception, 0) ?? (exception instanceof HttpException ? bodyError(exception.cause, 0) : null)) !== null;
  }

  private toBody(exception: unknown, method: string, path: string): { body: ErrorBody; headers: Record<string, string> } {
    if (exception instanceof ApiError || exception instanceof DomainValidationError) {
      const e = expectedFailure(exception) as ApiError;
      return { body: e.body, headers: e.headers };
    }
    // Nest may hand a Fastify error over wrapped in an HttpException, keeping it as `cause`.
    const parser = bodyError(exception, this.config.maxBodyBytes) ?? (exception instanceof HttpException ? bodyError(exception.cause, this.config.maxBodyBytes) : null);
    if (parser) return { body: parser, headers: {} };
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const response = exception.getResponse();
      const inner = typeof response === 'string' ? response : (response as { message?: unknown }).message;
      const message = typeof inner === 'string' ? inner : Array.isArray(inner) ? inner.join('; ') : exception.message;
      return { body: { statusCode: status, error: reasonPhrase(status), message, details: [] }, headers: {} };
    }
    if (isTransientDependencyError(exception)) {
      // Logged without the error object: a driver error may carry connection details.
      this.log.warn({ method, path, reason: (exception as Error).message?.slice(0, 200) }, 'dependency unavailable: answered 503');
      const e = expectedFailure(exception) as ApiError;
      return { body: e.body, headers: e.headers };
    }
    this.log.error({ err: exception, method, path }, 'unhandled error');
    return {
      body: { statusCode: 500, error: reasonPhrase(500), message: 'internal error', details: [] },
      headers: {},
    };
  }
}

/**
 * The path a request is routed by: the matched route's pattern, or for no route the URL's path
 * decoded as the router decodes it (`/%761/jobs` is /v1/jobs). What hooks that run before the
 * body is read judge a request by, so an encoded path cannot slip past them.
 */
export function routedPath(req: { routeOptions: { url?: string }; url: string }): string {
  if (req.routeOptions.url) return req.routeOptions.url;
  const raw = req.url.split('?', 1)[0];
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export function isApiPath(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/');
}

const bodyIssue = (status: number, field: string, rule: string, message: string): ErrorBody => ({
  statusCode: status,
  error: reasonPhrase(status),
  message,
  details: [{ field, rule, message }],
});

/**
 * Fastify rejects unreadable bodies before any controller runs, with `FST_ERR_*` errors that
 * carry their status.
 */
function bodyError(e: unknown, limit: number): ErrorBody | null {
  const err = e as { code?: unknown; statusCode?: unknown; message?: unknown } | null;
  if (!err || typeof err.statusCode !== 'number' || err.statusCode < 400 || err.statusCode >= 500) return null;
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return bodyIssue(413, 'body', 'too_large', `request body exceeds ${limit} bytes`);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return bodyIssue(400, 'body', 'json', 'request body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return bodyIssue(415, 'content-type', 'media_type', 'Content-Type must be application/json');
    default: {
      if (typeof err.code !== 'string' || !err.code.startsWith('FST_')) return null;
      return bodyIssue(err.statusCode, 'body', err.code.toLowerCase(), `unreadable request (${String(err.message)})`);
    }
  }
}
