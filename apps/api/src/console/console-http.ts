import type { FastifyReply, FastifyRequest } from 'fastify';
import { expectedFailure } from '../http/expected-failure';

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
 * https outside and http here, still matches). This host is Fastify's request.host: the Host
 * header, or the X-Forwarded-Host of a proxy ALMANAC_TRUST_PROXY names, so a proxy that sends
 * its own Host passes the browser's on there. A client that sends neither is no browser, and
 * no other site can make it post.
 */
export function sameOrigin(req: FastifyRequest): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.host;
  } catch {
    return false; // "null" (an opaque origin: a sandboxed frame, a data: page)
  }
}

export interface Failure {
  status: number;
  message: string;
  headers: Record<string, string>;
}

/** What the page tells of a failure the API answers on purpose (expectedFailure); null for a defect. */
export function describeFailure(err: unknown): Failure | null {
  const e = expectedFailure(err);
  return e && { status: e.status, message: e.message, headers: e.headers };
}
