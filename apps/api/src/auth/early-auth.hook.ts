import { isTransientDependencyError } from '@almanac/platform';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, unavailable } from '../http/api-error';
import type { TimedRequest } from '../http/request-clock';
import { performance } from 'node:perf_hooks';
import { isApiPath, routedPath } from '../http/api-exception.filter';
import { isConsolePath } from '../console/console-viewer';
import { IngestRateLimiter } from '../rate-limit/ingest-rate-limiter';
import { isIngestRoute, RequestRateLimiter } from '../rate-limit/request-rate-limiter';
import { AdminAuthGuard, type AuthedRequest, TenantAuthGuard, unauthorized } from './guards';

/**
 * Authenticates /v1 requests that carry a body before Fastify reads it (an `onRequest` hook; a
 * body elsewhere but under /console is refused, 404):
 * otherwise a stranger could make the API buffer and parse 4 MiB per request. The guards still
 * run on every route; for a request this hook let through they reuse its answer. A tenant whose
 * route's budget (jobs on ingest routes, else requests) is empty is refused here too (429), before
 * its body is read: a body the parser refuses spends one of it (ApiExceptionFilter), so broken
 * 4 MiB bodies are not read for free. Looking asks no one (the replica's last refusal for the
 * tenant, until its Retry-After) and spends nothing: a readable body spends as before.
 */
@Injectable()
export class EarlyAuthHook implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly tenantGuard: TenantAuthGuard,
    private readonly adminGuard: AdminAuthGuard,
    private readonly requests: RequestRateLimiter,
    private readonly ingest: IngestRateLimiter,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify) return;
    fastify.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      const path = routedPath(req);
      if (!hasBody(req)) return undefined;
      // Every route that takes a body is under /v1 or /console (whose form parser caps it): any
      // other path's body (a 404's, /health's) was read and parsed up to 4 MiB without a key.
      if (!isApiPath(path)) return isConsolePath(path) ? undefined : refuse(reply, new ApiError(404, `${req.method} ${path} takes no body here`));
      const started = performance.now();
      try {
        if (path.startsWith('/v1/admin/')) this.adminGuard.check(req);
        else {
          const authed: AuthedRequest = req;
          await this.tenantGuard.authenticate(authed);
          if (authed.tenant && isIngestRoute(req)) this.ingest.assertRoom(authed.tenant);
          else if (authed.tenant) this.requests.assertRoom(authed.tenant.id);
        }
        (req as TimedRequest).authMs = performance.now() - started; // counts against the deadline
        return undefined;
      } catch (err) {
        const e =
          err instanceof ApiError ? err
          : isTransientDependencyError(err) ? unavailable('the database is not answering in time; retry shortly')
          : unauthorized('could not authenticate');
        return refuse(reply, e);
      }
    });
  }
}

/** Answers before the body is read: the unread body would be taken for the connection's next request, so the connection closes. */
function refuse(reply: FastifyReply, e: ApiError): FastifyReply {
  return reply.code(e.status).headers({ ...e.headers, Connection: 'close' }).send(e.body);
}

function hasBody(req: FastifyRequest): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

