import { DomainValidationError } from '@almanac/domain';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error';
import { isTransientDependencyError } from '../http/dependency-errors';

/**
 * Pages load only what the api role serves: no inline script or style (the one script and the
 * one stylesheet are files), no framing, forms post only back here.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Sends a page, unless an answer already went (the request deadline's 503 may have). */
export function sendHtml(reply: FastifyReply, status: number, body: string, headers: Record<string, string> = {}): void {
  if (reply.sent) return;
  void reply
    .status(status)
    .headers({
      ...headers,
      'content-type': 'text/html; charset=utf-8',
      // A tenant's jobs: never kept by a shared cache or the browser's history cache.
      'cache-control': 'no-store',
      'content-security-policy': CONSOLE_CSP,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      // Not no-referrer: with it a browser sends `Origin: null` on the console's own posts.
      'referrer-policy': 'same-origin',
    })
    .send(body);
}

/** After a form post: 303, so a reload does not post again. */
export function redirect(reply: FastifyReply, to: string): void {
  if (reply.sent) return;
  void reply.status(303).header('location', to).header('cache-control', 'no-store').send();
}

/**
 * A form post from another site is refused even before its (SameSite) cookie would be missing.
 * The browser says where a post comes from: Sec-Fetch-Site (which no page can forge) when it
 * sends it, else an Origin naming this host (hosts only, so a TLS-terminating proxy in front,
 * https outside and http here, still matches). A client that sends neither is no browser, and
 * no other site can make it post.
 */
export function sameOrigin(req: FastifyRequest): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false; // "null" (an opaque origin: a sandboxed frame, a data: page)
  }
}

export interface Failure {
  status: number;
  message: string;
  headers: Record<string, string>;
}

/**
 * A refusal the API's services make (not found, conflict, invalid input, over a limit) or a
 * database that is not answering, as the page tells it; null for anything else (a defect: the
 * exception filter logs it and answers 500).
 */
export function describeFailure(err: unknown): Failure | null {
  if (err instanceof ApiError) return { status: err.status, message: err.message, headers: err.headers };
  if (err instanceof DomainValidationError) return { status: 400, message: err.message, headers: {} };
  if (isTransientDependencyError(err)) return { status: 503, message: 'the database is not answering in time; try again shortly', headers: { 'retry-after': '1' } };
  return null;
}
