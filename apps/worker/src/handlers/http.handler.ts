import { completed, defineHandler, discard, HandlerContext, HandlerOutcome, InvalidPayloadError, JsonValue, retry } from '@almanac/kinds';
import { defaultPort, type HostRule, outboundVerdict, parseCidr, parseHostRules, type UrlTarget } from '@almanac/domain';
import { SETTINGS } from '@almanac/platform';
import { Type } from '@sinclair/typebox';
import { createHmac } from 'node:crypto';
import { OutboundClient, RefusedAddressError, type Resolver } from './outbound-net';
import type { TenantOutboundSource } from './tenant-outbound';
import { inClientSpan } from './outbound-span';

/**
 * `http`: POSTs the payload's `body` as JSON to `url`, for people who write no TypeScript.
 *
 * Payload: `{ "url": "https://hooks.example.com/x", "body"?: any JSON, "headers"?: {name: value} }`.
 * - A URL is called only when it matches an entry of the installation's allow-list
 *   (ALMANAC_HTTP_ALLOW_HOSTS) and one of the tenant's (`httpAllowHosts`, set by
 *   `PATCH /v1/admin/tenants/:id`): `scheme://host[:port]`, `*.` spelled out for subdomains.
 * - The address a host resolves to is checked by the lookup the socket connects with (no second
 *   DNS answer between check and connect): loopback, private, link-local, metadata
 *   and other special ranges are refused unless ALMANAC_HTTP_ALLOW_CIDRS allows them.
 * - Redirects are not followed: a 3xx is the attempt's outcome (discarded, its status and
 *   Location recorded). A signed request goes only to the URL the job names, never to one the
 *   receiver chooses (a signature covers its URL so that it is good there only).
 * - Every request is signed (signatureHeader) with each of the tenant's live signing secrets
 *   (newest first; two during a rotation), and
 *   carries `Almanac-Tenant`, `Almanac-Job-Id`, `Almanac-Attempt` and
 *   `Idempotency-Key: <tenantId>:<jobId>` (the receiver can drop a second delivery of the job).
 *   The job's id, not its key: a key retention freed is taken by a new job, whose call a
 *   receiver deduplicating on the key would answer from its cache without applying it.
 * - A response body is read up to ALMANAC_HTTP_MAX_RESPONSE_BYTES, never further.
 * - 2xx → completed with `{status}`; 5xx, 408, 429 and network errors → retry (429/503 honour
 *   a numeric Retry-After); any other status → discard (dead), status recorded. A URL off the
 *   lists, a refused address, a tenant with no signing secret, a header value Node refuses (CR/LF,
 *   other controls, above U+00FF) are discarded: retrying cannot help.
 * - A URL's fragment is dropped (Node never sends it), so the signature covers what is sent.
 */
export interface HttpPayload {
  url: string;
  body?: JsonValue;
  headers?: Record<string, string>;
}

/** What the API checks at ingest; parseHttpPayload checks the rest (scheme, credentials, header text) as it runs. */
export const HttpPayloadSchema = Type.Object(
  {
    url: Type.String({ format: 'uri', maxLength: 2048, description: 'http(s) URL on an allowed host' }),
    body: Type.Optional(Type.Unknown({ description: 'Any JSON; sent as the request body' })),
    headers: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 8192 }), { description: 'Extra request headers' })),
  },
  { additionalProperties: false },
);

export interface HttpHandlerOptions {
  /** The installation's allow-list (ALMANAC_HTTP_ALLOW_HOSTS): `scheme://host[:port]` entries. */
  allowHosts: readonly string[];
  /** Ranges a call may reach although they are loopback, private, link-local… (ALMANAC_HTTP_ALLOW_CIDRS). */
  allowCidrs?: readonly string[];
  /** The most of a response body ever read (ALMANAC_HTTP_MAX_RESPONSE_BYTES, default 1 MiB). */
  maxResponseBytes?: number;
  timeoutMs?: number;
  /** Each tenant's allow-list and signing secrets (Postgres, cached). */
  tenants: TenantOutboundSource;
  /** DNS, for tests that need a name to resolve somewhere in particular; default the system's resolver. */
  resolve?: Resolver;
}

/** When the options do not say (tests): the declared default of ALMANAC_HTTP_MAX_RESPONSE_BYTES. */
const DEFAULT_MAX_RESPONSE_BYTES = SETTINGS.ALMANAC_HTTP_MAX_RESPONSE_BYTES.default;
/** Headers the payload may not set: the transport's own, and Almanac's (signature, tenant, job, attempt). */
const RESERVED_HEADERS = new Set(['idempotency-key', 'host', 'content-length', 'transfer-encoding', 'connection', 'user-agent']);
const RESERVED_PREFIX = 'almanac-';
/** RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Node's own check of a header value: what it refuses throws at send time, which would be retried, not discarded. */
const REFUSED_HEADER_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

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
      if (!HEADER_NAME.test(name)) throw new InvalidPayloadError(`http payload: header name ${JSON.stringify(name.slice(0, 60))} is not a valid header name`);
      if (typeof value !== 'string') throw new InvalidPayloadError(`http payload: header ${name} must be a string`);
      // A CR or LF would end the header and start another (header injection): never sent, never retried.
      if (/[\r\n]/.test(value)) throw new InvalidPayloadError(`http payload: header ${name} contains CR or LF, which would inject headers`);
      const refused = REFUSED_HEADER_CHAR.exec(value);
      if (refused) {
        const code = value.codePointAt(refused.index)!.toString(16).toUpperCase().padStart(4, '0');
        throw new InvalidPayloadError(`http payload: header ${name} contains U+${code}, which Node refuses in a header value (control characters, anything above U+00FF)`);
      }
      const lower = name.toLowerCase();
      if (!RESERVED_HEADERS.has(lower) && !lower.startsWith(RESERVED_PREFIX)) headers[name] = value;
    }
  }
  url.hash = ''; // never sent, so never signed: the receiver rebuilds the URL from path and query
  return { url: url.href, body: p.body as JsonValue | undefined, headers };
}

/** What a signature covers: a captured call replayed with another key, method or URL fails it. */
export interface SignedRequest {
  method: string;
  /** The URL as called (its href, with no fragment: a receiver rebuilds it from its public origin and the request's path and query). */
  url: string;
  idempotencyKey: string;
  body: string;
}

/**
 * `Almanac-Signature`: `t=<unix seconds>` and one `v1=<hex HMAC-SHA256>` per secret, newest
 * first, over `<t>\n<method>\n<url>\n<idempotency key>\n<body>` (no part but the body can hold a
 * newline: keys refuse whitespace, and a URL's href encodes it). A receiver accepts the request
 * when any v1 matches its secret.
 */
export function signatureHeader(secrets: readonly string[], t: number, req: SignedRequest): string {
  const signed = [t, req.method, req.url, req.idempotencyKey, req.body].join('\n');
  return [`t=${t}`, ...secrets.map((s) => `v1=${createHmac('sha256', s).update(signed, 'utf8').digest('hex')}`)].join(',');
}

function targetOf(url: URL): UrlTarget {
  const scheme = url.protocol.slice(0, -1);
  return { scheme, host: url.hostname, port: url.port ? Number(url.port) : defaultPort(scheme) };
}

function retryAfterMs(headers: Record<string, string | string[] | undefined>): number | undefined {
  const v = headers['retry-after'];
  if (typeof v !== 'string' || !/^\d+$/.test(v.trim())) return undefined;
  return Math.min(Number(v) * 1000, 24 * 3600_000);
}

interface HttpRules {
  installation: readonly HostRule[];
  maxResponseBytes: number;
  tenants: TenantOutboundSource;
  client: OutboundClient;
}

async function post(ctx: HandlerContext, payload: HttpPayload, rules: HttpRules): Promise<HandlerOutcome> {
  const tenant = await rules.tenants.get(ctx.tenantId);
  if (!tenant) return discard(`tenant ${ctx.tenantId} does not exist`);
  if (tenant.secrets.length === 0) {
    return discard(`tenant ${ctx.tenantId} has no signing secret: an operator makes one with POST /v1/admin/tenants/${ctx.tenantId}/signing-secrets`);
  }
  const url = new URL(payload.url);
  const method = 'POST';
  const body = payload.body === undefined ? undefined : JSON.stringify(payload.body);
  const verdict = outboundVerdict(targetOf(url), rules.installation, tenant.allowHosts);
  if (verdict === 'installation') return discard(`${url.origin} is not on the installation's allow-list (ALMANAC_HTTP_ALLOW_HOSTS)`);
  if (verdict === 'tenant') return discard(`${url.origin} is not on this tenant's httpAllowHosts`);
  const t = Math.floor(Date.now() / 1000);
  const idempotencyKey = `${ctx.tenantId}:${ctx.jobId}`; // the same on every retry and rescue of this job, and on no other job
  let res;
  try {
    res = await inClientSpan(ctx.traceContext, method, url, (traceHeaders) => rules.client.send({
      tenantId: ctx.tenantId,
      url,
      method,
      body,
      signal: ctx.signal,
      maxBodyBytes: rules.maxResponseBytes,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...payload.headers,
        ...traceHeaders,
        'idempotency-key': idempotencyKey,
        'user-agent': 'almanac-worker',
        'almanac-signature': signatureHeader(tenant.secrets, t, { method, url: url.href, idempotencyKey, body: body ?? '' }),
        'almanac-tenant': String(ctx.tenantId),
        'almanac-job-id': ctx.jobId,
        'almanac-attempt': String(ctx.attempt),
      },
    }));
  } catch (err) {
    if (!(err instanceof RefusedAddressError)) throw err; // network errors retry
    // The address is for the operator's log; the tenant is told the range only.
    ctx.logger.warn({ host: err.host, address: err.address, range: err.range }, 'http call refused: the host resolves to a refused address');
    return discard(`${url.origin} resolves to a ${err.range} address, which calls may not reach`);
  }
  const { status, headers } = res;
  const result: { [k: string]: JsonValue } = res.truncated ? { status, bodyTruncatedAt: rules.maxResponseBytes } : { status };
  if (status >= 200 && status < 300) return completed(result);
  if (status >= 500 || status === 408 || status === 429) {
    const delayMs = retryAfterMs(headers);
    return retry({ reason: `HTTP ${status}`, result, ...(delayMs !== undefined ? { delayMs } : {}) });
  }
  // A redirect is not followed: its hop would carry a signature good at a URL the receiver chose.
  const location = status >= 300 && status < 400 && typeof headers.location === 'string' ? headers.location : undefined;
  if (location !== undefined) return discard(`HTTP ${status}: redirects are not followed (Location ${JSON.stringify(location.slice(0, 200))}); give the job the final URL`, result);
  return discard(`HTTP ${status}`, result);
}

export function httpHandler(opts: HttpHandlerOptions) {
  const cidrs = (opts.allowCidrs ?? []).map((c) => {
    const cidr = parseCidr(c);
    if (!cidr) throw new Error(`http handler: ${JSON.stringify(c)} is not a CIDR`);
    return cidr;
  });
  const rules: HttpRules = {
    installation: parseHostRules([...opts.allowHosts], 'ALMANAC_HTTP_ALLOW_HOSTS'),
    maxResponseBytes: opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    tenants: opts.tenants,
    client: new OutboundClient(cidrs, opts.resolve),
  };
  return defineHandler<HttpPayload>({
    kind: 'http',
    timeoutMs: opts.timeoutMs ?? 30_000,
    pool: 'default',
    payloadSchema: HttpPayloadSchema,
    parse: parseHttpPayload,
    handle: (ctx, payload) => post(ctx, payload, rules),
  });
}
