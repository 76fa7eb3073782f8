import { Env, envInt, envList } from '@almanac/platform';
import type { HandlerSettings } from './index';

/**
 * ALMANAC_HTTP_ALLOW_HOSTS: hosts the `http` kind may call, comma-separated, `host` or
 * `host:port` (default empty: the http kind calls nothing). ALMANAC_HTTP_TIMEOUT_MS: per
 * attempt (default 30000). ALMANAC_SMTP_URL (`smtp://user:pass@host:587`): set, the worker runs
 * the `email` kind, sending as ALMANAC_EMAIL_FROM. Read by the worker.
 */
export function handlerSettingsFromEnv(env: Env): HandlerSettings {
  const smtpUrl = env.ALMANAC_SMTP_URL;
  return {
    ...(smtpUrl ? { email: { smtpUrl, from: env.ALMANAC_EMAIL_FROM ?? 'almanac@localhost' } } : {}),
    http: {
      allowHosts: envList(env, 'ALMANAC_HTTP_ALLOW_HOSTS', [], {
        pattern: /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/,
        describe: 'host names or host:port pairs',
      }).map((h) => h.toLowerCase()),
      timeoutMs: envInt(env, 'ALMANAC_HTTP_TIMEOUT_MS', 30_000, { min: 100, max: 3600_000 }),
    },
  };
}
