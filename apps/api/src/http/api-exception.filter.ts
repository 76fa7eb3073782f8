import { DomainValidationError } from '@almanac/domain';
import { ArgumentsHost, Catch, HttpException, Logger } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import type { HttpRequest as Request, HttpResponse as Response } from './http-types';
import { ApiError, ErrorBody, invalid, reasonPhrase } from './api-error';

/**
 * Shapes every error on the API's routes as `{statusCode, error, message, details}`; other
 * routes (health, metrics of co-hosted roles) keep Nest's default handling. Body-parser errors
 * (malformed JSON, oversize body) arrive here too, before any controller runs.
 */
@Catch()
export class ApiExceptionFilter extends BaseExceptionFilter {
  private readonly log = new Logger('ApiErrors');

  override catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    if (!isApiPath(req.path ?? req.url)) return super.catch(exception, host);
    const { body, headers } = this.toBody(exception, req);
    if (res.headersSent) return;
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.status(body.statusCode).json(body);
  }

  private toBody(exception: unknown, req: Request): { body: ErrorBody; headers: Record<string, string> } {
    if (exception instanceof ApiError) return { body: exception.body, headers: exception.headers };
    if (exception instanceof DomainValidationError) {
      return { body: invalid([{ field: exception.field, rule: exception.rule, message: exception.message }]).body, headers: {} };
    }
    // Nest's Express adapter wraps body-parser errors in an HttpException and keeps them as `cause`.
    const parser = bodyParserError(exception) ?? (exception instanceof HttpException ? bodyParserError(exception.cause) : null);
    if (parser) return { body: parser, headers: {} };
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const response = exception.getResponse();
      const inner = typeof response === 'string' ? response : (response as { message?: unknown }).message;
      const message = typeof inner === 'string' ? inner : Array.isArray(inner) ? inner.join('; ') : exception.message;
      return { body: { statusCode: status, error: reasonPhrase(status), message, details: [] }, headers: {} };
    }
    this.log.error({ err: exception, method: req.method, path: req.path }, 'unhandled error');
    return {
      body: { statusCode: 500, error: reasonPhrase(500), message: 'internal error', details: [] },
      headers: {},
    };
  }
}

export function isApiPath(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/');
}

/** body-parser (via http-errors) marks its errors with `type` and `status`. */
function bodyParserError(e: unknown): ErrorBody | null {
  const err = e as { type?: unknown; status?: unknown; limit?: unknown } | null;
  if (!err || typeof err.type !== 'string') return null;
  switch (err.type) {
    case 'entity.parse.failed':
      return { statusCode: 400, error: reasonPhrase(400), message: 'request body is not valid JSON', details: [{ field: 'body', rule: 'json', message: 'request body is not valid JSON' }] };
    case 'entity.too.large': {
      const message = `request body exceeds ${String(err.limit)} bytes`;
      return { statusCode: 413, error: reasonPhrase(413), message, details: [{ field: 'body', rule: 'too_large', message }] };
    }
    case 'encoding.unsupported':
    case 'charset.unsupported':
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
    case 'stream.not.readable': {
      const status = typeof err.status === 'number' && err.status >= 400 && err.status < 500 ? err.status : 400;
      return { statusCode: status, error: reasonPhrase(status), message: `unreadable request body (${err.type})`, details: [{ field: 'body', rule: err.type, message: 'unreadable request body' }] };
    }
    default:
      return null;
  }
}
