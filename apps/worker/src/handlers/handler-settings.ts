import { DomainValidationError, parseCidr, parseHostRules } from '@almanac/domain';
import { ConfigError, Env, envInt, envList } from '@almanac/platform';
import { DEFAULT_MAX_RESPONSE_BYTES } from './http.handler';
import type { HandlerSettings } from './index';
import { tenantOutboundFromDatabase } from './tenant-outbound';

/**
 * Read by the worker:
 * - ALMANAC_HTTP_ALLOW_HOSTS: the installation's allow-list for the `http` kind, comma-separated
 *   `scheme://host[:port]` entries (`https://*.example.com` for subdomains); default empty: the
 *   http kind calls nothing. Each tenant's own list (`httpAllowHosts`) is intersected with it.
 * - ALMANAC_HTTP_ALLOW_CIDRS: address ranges the `http` kind may reach although they are
 *   loopback, private, link-local, metadata… (e.g. `10.20.0.0/16` for an internal receiver);
 *   default none.
 * - ALMANAC_HTTP_MAX_RESPONSE_BYTES: the most of a response body ever read (default 1 MiB).
 * - ALMANAC_HTTP_TIMEOUT_MS: per attempt (default 30000).
 * - ALMANAC_SMTP_URL (`smtp://user:pass@host:587`): set, the worker runs the `email` kind,
 *   sending as ALMANAC_EMAIL_FROM.
 */
export function handlerSettingsFromEnv(env: Env): HandlerSettings {
  const smtpUrl = env.ALMANAC_SMTP_URL;
  const allowHosts = envList(env, 'ALMANAC_HTTP_ALLOW_HOSTS', []);
  try {
    parseHostRules(allowHosts, 'ALMANAC_HTTP_ALLOW_HOSTS');
  } catch (err) {
    if (err instanceof DomainValidationError) throw new ConfigError(`${err.message.replace(/\[(\d+)\]/, (_, i: string) => ` entry ${Number(i) + 1}`)} (entries are now scheme://host[:port], e.g. https://hooks.example.com)`);
    throw err;
  }
  const allowCidrs = envList(env, 'ALMANAC_HTTP_ALLOW_CIDRS', []);
  for (const c of allowCidrs) {
    if (!parseCidr(c)) throw new ConfigError(`ALMANAC_HTTP_ALLOW_CIDRS must be CIDRs like 10.20.0.0/16 or fd00:1::/64 (got ${JSON.stringify(c)})`);
  }
  return {
    ...(smtpUrl ? { email: { smtpUrl, from: env.ALMANAC_EMAIL_FROM ?? 'almanac@localhost' } } : {}),
    http: {
      allowHosts,
      allowCidrs,
      maxResponseBytes: envInt(env, 'ALMANAC_HTTP_MAX_RESPONSE_BYTES', DEFAULT_MAX_RESPONSE_BYTES, { min: 0, max: 64 * 1024 * 1024 }),
      timeoutMs: envInt(env, 'ALMANAC_HTTP_TIMEOUT_MS', 30_000, { min: 100, max: 3600_000 }),
      // Opened on the first http job: a worker that runs none never connects for it.
      tenants: tenantOutboundFromDatabase(env),
    },
  };
}
