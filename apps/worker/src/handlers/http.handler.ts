import { completed, defineHandler, discard, HandlerContext, HandlerOutcome, InvalidPayloadError, JsonValue, retry } from '@almanac/delivery';
import { Type } from '@sinclair/typebox';

/**
 * `http`: POSTs the payload's `body` as JSON to `url`, for people who write no TypeScript.
 *
 * Payload: `{ "url": "https://hooks.example.com/x", "body"?: any JSON, "headers"?: {name: value} }`.
 * - Only hosts on ALMANAC_HTTP_ALLOW_HOSTS are contacted (empty list: none), so a tenant cannot
 *   make the worker call internal addresses. Entries are `host` (any port) or `host:port`.
 * - Redirects are followed by hand (at most 5), and only to allowed hosts; a redirect to another
 *   origin does not carry the payload's Authorization, Cookie or Proxy-Authorization header.
 * - `Idempotency-Key: <tenantId>:<key>` lets the receiver drop a second delivery of the job.
 * - 2xx → completed with `{status}`; 5xx, 408, 429 and network errors → retry (429/503 honour
 *   a numeric Retry-After); any other status → discard (dead), status recorded.
 */
export interface HttpPayload {
  url: string;
  body?: JsonValue;
  headers?: Record<string, string>;
}

/** What the API checks at ingest; parseHttpPayload checks the rest (scheme, credentials) as it runs. */
export const HttpPayloadSchema = Type.Object(
  {
    url: Type.String({ format: 'uri', maxLength: 2048, description: 'http(s) URL on an allowed host' }),
    body: Type.Optional(Type.Unknown({ description: 'Any JSON; sent as the request body' })),
    headers: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 8192 }), { description: 'Extra request headers' })),
  },
  { additionalProperties: false },
);

export interface HttpHandlerOptions {
  allowHosts: readonly string[];
  timeoutMs?: number;
}

const MAX_REDIRECTS = 5;
const RESERVED_HEADERS = new Set(['idempotency-key', 'host', 'content-length', 'transfer-encoding', 'connection']);
/** Dropped when a redirect leaves the payload URL's origin, as fetch itself does for Authorization. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

export function parseHttpPayload(raw: unknown): HttpPayload {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidPayloadError('http payload must be an object with a url');
  const p = raw as Record<string, unknown>;
  if (typeof p.url !== 'string') throw new InvalidPayloadError('http payload: url must be a string');
  let url: URL;
  try {
    url = new URL(p.url);
  } catch {
    throw new InvalidPayloadError('http payload: url is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidPayloadError('http payload: url must be http(s)');
  if (url.username || url.password) throw new InvalidPayloadError('http payload: url must not carry credentials');
  const headers: Record<string, string> = {};
  if (p.headers !== undefined) {
    if (typeof p.headers !== 'object' || p.headers === null || Array.isArray(p.headers)) {
      throw new InvalidPayloadError('http payload: headers must be an object of strings');
    }
    for (const [name, value] of Object.entries(p.headers)) {
      if (typeof value !== 'string') throw new InvalidPayloadError(`http payload: header ${name} must be a string`);
      if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name] = value;
    }
  }
  return { url: url.toString(), body: p.body as JsonValue | undefined, headers };
}

/** `host` matches any port; `host:port` only that port. Case-insensitive; IPv6 in brackets. */
export function isHostAllowed(url: URL, allowHosts: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allowHosts.some((entry) => {
    const e = entry.toLowerCase();
    return e === host || e === `${host}:${port}`;
  });
}

function retryAfterMs(res: Response): number | undefined {
  const v = res.headers.get('retry-after');
  if (!v || !/^\d+$/.test(v.trim())) return undefined;
  return Math.min(Number(v) * 1000, 24 * 3600_000);
}

async function post(ctx: HandlerContext, payload: HttpPayload, allowHosts: readonly string[]): Promise<HandlerOutcome> {
  let url = new URL(payload.url);
  let method = 'POST';
  let body: string | undefined = payload.body === undefined ? undefined : JSON.stringify(payload.body);
  const origin = url.origin;
  const crossOrigin = Object.fromEntries(Object.entries(payload.headers ?? {}).filter(([name]) => !CREDENTIAL_HEADERS.has(name.toLowerCase())));
  for (let hop = 0; ; hop++) {
    if (!isHostAllowed(url, allowHosts)) {
      return discard(hop === 0 ? `host ${url.host} is not on ALMANAC_HTTP_ALLOW_HOSTS` : `redirect to ${url.host} is not on ALMANAC_HTTP_ALLOW_HOSTS`);
    }
    const res = await fetch(url, {
      method,
      body,
      redirect: 'manual',
      signal: ctx.signal,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(url.origin === origin ? payload.headers : crossOrigin),
        'idempotency-key': `${ctx.tenantId}:${ctx.key}`,
        'user-agent': 'almanac-worker',
      },
    });
    // The body is never stored; release the socket.
    await res.body?.cancel().catch(() => undefined);
    const status = res.status;
    const location = res.headers.get('location');
    if (status >= 300 && status < 400 && location) {
      if (hop >= MAX_REDIRECTS) return discard(`more than ${MAX_REDIRECTS} redirects`, { status });
      url = new URL(location, url);
      if (status !== 307 && status !== 308) {
        method = 'GET';
        body = undefined;
      }
      continue;
    }
    if (status >= 200 && status < 300) return completed({ status });
    if (status >= 500 || status === 408 || status === 429) {
      const delayMs = retryAfterMs(res);
      return retry({ reason: `HTTP ${status}`, result: { status }, ...(delayMs !== undefined ? { delayMs } : {}) });
    }
    return discard(`HTTP ${status}`, { status });
  }
}

export function httpHandler(opts: HttpHandlerOptions) {
  const allowHosts = [...opts.allowHosts];
  return defineHandler<HttpPayload>({
    kind: 'http',
    timeoutMs: opts.timeoutMs ?? 30_000,
    pool: 'default',
    payloadSchema: HttpPayloadSchema,
    parse: parseHttpPayload,
    handle: (ctx, payload) => post(ctx, payload, allowHosts),
  });
}
