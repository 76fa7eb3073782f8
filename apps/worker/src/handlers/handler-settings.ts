import { DomainValidationError, parseCidr, parseHostRules } from '@almanac/domain';
import { ConfigError, Env, readSetting } from '@almanac/platform';
import type { DataSource } from 'typeorm';
import type { HandlerSettings } from './index';
import { outboundRulesReader, TenantOutboundCache } from './tenant-outbound';

/**
 * The handlers' settings (libs/config/src/settings/workers.ts declares them): the `http` kind's
 * allow-lists and limits, and the `email` kind's server, which it runs only when one is set.
 */
export function handlerSettingsFromEnv(env: Env, dataSource: DataSource): HandlerSettings {
  const smtpUrl = readSetting(env, 'ALMANAC_SMTP_URL');
  const allowHosts = readSetting(env, 'ALMANAC_HTTP_ALLOW_HOSTS');
  try {
    parseHostRules(allowHosts, 'ALMANAC_HTTP_ALLOW_HOSTS');
  } catch (err) {
    if (err instanceof DomainValidationError) throw new ConfigError(`${err.message.replace(/\[(\d+)\]/, (_, i: string) => ` entry ${Number(i) + 1}`)} (entries are now scheme://host[:port], e.g. https://hooks.example.com)`);
    throw err;
  }
  const allowCidrs = readSetting(env, 'ALMANAC_HTTP_ALLOW_CIDRS');
  for (const c of allowCidrs) {
    if (!parseCidr(c)) throw new ConfigError(`ALMANAC_HTTP_ALLOW_CIDRS must be CIDRs like 10.20.0.0/16 or fd00:1::/64 (got ${JSON.stringify(c)})`);
  }
  // One cache for both kinds: a tenant's rules are read once for its http calls and its email.
  const tenants = new TenantOutboundCache(outboundRulesReader(dataSource));
  return {
    ...(smtpUrl ? { email: { smtpUrl, from: readSetting(env, 'ALMANAC_EMAIL_FROM'), allowPlaintext: readSetting(env, 'ALMANAC_SMTP_ALLOW_PLAINTEXT'), tenants } } : {}),
    http: {
      allowHosts,
      allowCidrs,
      maxResponseBytes: readSetting(env, 'ALMANAC_HTTP_MAX_RESPONSE_BYTES'),
      timeoutMs: readSetting(env, 'ALMANAC_HTTP_TIMEOUT_MS'),
      tenants,
    },
  };
}
