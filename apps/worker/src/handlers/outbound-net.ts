import { type Cidr, refusedRange } from '@almanac/domain';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent as HttpAgent, type AgentOptions, type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import { LookupShares } from './lookup-shares';

/**
 * The `http` kind's network side: every connection goes to an address that was checked
 * (`refusedRange`) after DNS, by the lookup the socket itself uses, so nothing resolves the
 * name a second time between the check and the connect (DNS rebinding). IP literals skip DNS
 * and are checked before the request.
 */

/** The address a host resolved to (or its literal address) is in a range no call may reach. */
export class RefusedAddressError extends Error {
  override readonly name = 'RefusedAddressError';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: string,
  ) {
    super(`${host} resolves to a ${range} address`);
  }
}

/** Resolves a host name to every address it has (the test seam for DNS answers; the default is the system's). */
export type Resolver = (host: string, family: number) => Promise<LookupAddress[]>;

const systemResolver: Resolver = (host, family) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, family }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/**
 * A `lookup` for sockets that resolves, drops every address in a refused range, and hands the
 * socket only what is left: the connect goes to a checked address. With none left it fails with
 * RefusedAddressError (naming the first refused range).
 */
export function checkedLookup(allowCidrs: readonly Cidr[], resolve: Resolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    const family = typeof options.family === 'number' ? options.family : 0;
    resolve(hostname, family).then(
      (addresses) => {
        let refused: RefusedAddressError | undefined;
        const ok = addresses.filter((a) => {
          const range = refusedRange(a.address, allowCidrs);
          if (range) refused ??= new RefusedAddressError(hostname, a.address, range);
          return range === null;
        });
        if (ok.length === 0) {
          callback(refused ?? Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
        } else if (options.all) {
          callback(null, ok);
        } else {
          callback(null, ok[0].address, ok[0].family);
        }
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

/** Checks a URL host that is an IP literal (no DNS, so the socket's lookup never sees it); names pass. */
export function checkLiteral(hostname: string, allowCidrs: readonly Cidr[]): void {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) === 0) return;
  const range = refusedRange(bare, allowCidrs);
  if (range) throw new RefusedAddressError(hostname, bare, range);
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Body bytes read (at most the bound). */
  bodyBytes: number;
  /** The body was longer than the bound (or announced so): the rest was never read, the connection closed. */
  truncated: boolean;
}

export interface OutboundRequest {
  /** Whose call: its name lookups take that tenant's share (LookupShares). */
  tenantId: number;
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  maxBodyBytes: number;
}

/** How the keep-alive agents hold sockets (each agent: one for http, one for https). */
export interface SocketLimits {
  /** An idle kept-alive socket is closed after this long (or the server's shorter `Keep-Alive: timeout`). */
  idleMs: number;
  /** Sockets to one origin at once. */
  perOrigin: number;
  /** Idle sockets kept per origin. */
  idlePerOrigin: number;
  /** Idle sockets kept over every origin: a socket freed past it is closed, not kept. */
  idle: number;
}

/**
 * Bounded, so that a tenant allowed a wildcard host cannot hold the worker's file descriptors
 * with calls to a1, a2, … of a server that never closes idle connections. 10 s idle keeps a
 * receiver's connection warm across a burst of its jobs (calls come seconds apart) and no longer.
 * Only idle sockets are capped: a cap on all sockets would make a call to a new origin wait for
 * someone's idle socket to time out. Sockets in use are bounded by the calls a worker makes at
 * once (ALMANAC_WORKER_CONCURRENCY, 200 per pool); both are far below a process's descriptor limit.
 */
export const OUTBOUND_SOCKETS: SocketLimits = { idleMs: 10_000, perOrigin: 256, idlePerOrigin: 32, idle: 256 };

/** Idle sockets the agent keeps, over every origin. */
function idleSockets(agent: HttpAgent): number {
  let idle = 0;
  for (const sockets of Object.values(agent.freeSockets)) idle += sockets?.length ?? 0;
  return idle;
}

/**
 * Node's agent asks `keepSocketAlive` before it keeps a freed socket (per-origin limits already
 * passed), and destroys the socket on false. Node's own answer sets the idle timeout (or the
 * server's shorter hint) and may be false too; @types/node types it void.
 */
class IdleCappedHttpAgent extends HttpAgent {
  constructor(options: AgentOptions, private readonly maxIdle: number) {
    super(options);
  }
  override keepSocketAlive(socket: Duplex): boolean {
    return idleSockets(this) < this.maxIdle && (super.keepSocketAlive(socket) as unknown as boolean);
  }
}
class IdleCappedHttpsAgent extends HttpsAgent {
  constructor(options: AgentOptions, private readonly maxIdle: number) {
    super(options);
  }
  override keepSocketAlive(socket: Duplex): boolean {
    return idleSockets(this) < this.maxIdle && (super.keepSocketAlive(socket) as unknown as boolean);
  }
}

/** Keep-alive agents whose new connections go through the checked lookup. */
export class OutboundClient {
  private readonly httpAgent: HttpAgent;
  private readonly httpsAgent: HttpsAgent;
  private readonly shares = new LookupShares();

  constructor(
    private readonly allowCidrs: readonly Cidr[],
    private readonly resolve: Resolver = systemResolver,
    limits: SocketLimits = OUTBOUND_SOCKETS,
  ) {
    // `timeout` is the agent's idle timeout: it closes a socket that times out while free (one
    // in use only reports it to its request, which the kind's own timeout bounds).
    const agent = { keepAlive: true, timeout: limits.idleMs, maxSockets: limits.perOrigin, maxFreeSockets: limits.idlePerOrigin };
    this.httpAgent = new IdleCappedHttpAgent(agent, limits.idle);
    this.httpsAgent = new IdleCappedHttpsAgent(agent, limits.idle);
  }

  /** One request, its response's body read up to the bound and no further. Rejects on network errors. */
  send(req: OutboundRequest): Promise<OutboundResponse> {
    checkLiteral(req.url.hostname, this.allowCidrs);
    const https = req.url.protocol === 'https:';
    return new Promise<OutboundResponse>((resolve, reject) => {
      let settled = false;
      const settle = (fn: () => void) => {
        if (!settled) {
          settled = true;
          req.signal.removeEventListener('abort', aborted);
          fn();
        }
      };
      // Node settles an aborted request waiting in the agent for a socket only once a socket
      // frees (then it is not sent): a call past its deadline behind calls to a slow origin waited for them.
      const aborted = () => settle(() => reject(req.signal.reason instanceof Error ? req.signal.reason : new Error('the call was aborted', { cause: req.signal.reason })));
      req.signal.addEventListener('abort', aborted, { once: true });
      const options = {
        method: req.method,
        headers: req.headers,
        signal: req.signal,
        // New connections resolve through the check (happy eyeballs picks among what it returned),
        // taking this tenant's share of the lookups.
        lookup: checkedLookup(this.allowCidrs, (host, family) => this.shares.resolve(req.tenantId, () => this.resolve(host, family))),
      };
      const r = https ? httpsRequest(req.url, { ...options, agent: this.httpsAgent }) : httpRequest(req.url, { ...options, agent: this.httpAgent });
      r.on('error', (err) => settle(() => reject(err)));
      r.on('response', (res) => {
        const done = (bodyBytes: number, truncated: boolean) => settle(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, bodyBytes, truncated }));
        const announced = Number(res.headers['content-length']);
        if (Number.isFinite(announced) && announced > req.maxBodyBytes) {
          res.destroy(); // never read a body announced past the bound
          done(0, true);
          return;
        }
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > req.maxBodyBytes) {
            res.destroy();
            done(req.maxBodyBytes, true);
          }
        });
        res.on('end', () => done(bytes, false));
        res.on('error', (err) => settle(() => reject(err)));
        res.on('close', () => settle(() => reject(new Error('the response ended early'))));
      });
      r.end(req.body);
    });
  }
}
