import { formatIp, parseCidr, parseIp } from '@almanac/domain';
import type { FastifyRequest } from 'fastify';

/**
 * The source a request is counted under by the per-address limits (wrong admin tokens, key
 * lookups): the address Fastify sees (a proxy's, unless it is trusted); IPv6 by its /64, which
 * one host owns.
 */
export function sourceOf(req: FastifyRequest): string {
  return sourceKey(req.ip ?? '');
}

/**
 * An address's source key: IPv4 as it is, IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as its IPv4
 * address, other IPv6 as its /64 in canonical form (`2001:db8::/64`). Taken from the parsed
 * address, not the written one: `::` may stand inside the first four groups (`2001:db8::5`), and
 * every way of writing one /64 must be one source, or its owner gets a bucket per spelling.
 */
export function sourceKey(ip: string): string {
  const parsed = ip.includes(':') ? parseIp(ip) : null;
  if (!parsed) return ip;
  const b = parsed.bytes;
  if (b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return formatIp({ version: 4, bytes: b.slice(12) });
  return parseCidr(`${formatIp(parsed)}/64`)!.text;
}
