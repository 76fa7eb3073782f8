import type { FastifyRequest } from 'fastify';

/**
 * The source a request is counted under by the per-address limits (wrong admin tokens, key
 * lookups): the address Fastify sees (a proxy's, unless it is trusted); IPv6 by its first four
 * groups (a /64 as usually written), which one host owns.
 */
export function sourceOf(req: FastifyRequest): string {
  const ip = req.ip ?? '';
  return ip.includes(':') && !ip.startsWith('::ffff:') ? ip.split(':').slice(0, 4).join(':') : ip;
}
