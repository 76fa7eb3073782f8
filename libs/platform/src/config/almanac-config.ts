import { ConfigError, Env, readSetting, SETTINGS } from '@almanac/config';
import { DatabaseConfig, databaseConfigFromEnv, redactUrl } from '@almanac/persistence';
import { refusePublishedSecrets } from './published-secrets';

/** Nest injection token for the validated `AlmanacConfig`. */
export const ALMANAC_CONFIG = Symbol('ALMANAC_CONFIG');

type LogLevel = (typeof SETTINGS.ALMANAC_LOG_LEVEL.values)[number];

/** Core settings shared by every role (libs/config/src/settings/core.ts declares them). */
export interface AlmanacConfig {
  production: boolean;
  port: number;
  /**
   * When set, /v1/admin/* is answered only on this port and is a 404 on PORT. Only processes
   * with admin routes (the api, all-in-one) open it.
   */
  adminPort: number | undefined;
  /** When set, /metrics is answered only on this port and is a 404 on PORT. */
  metricsPort: number | undefined;
  database: DatabaseConfig;
  redisUrl: string;
  /** Seed nodes of a Redis Cluster (ALMANAC_REDIS_CLUSTER_NODES); null: one server at redisUrl. */
  redisClusterNodes: { host: string; port: number }[] | null;
  /** The process-wide Redis connection fails a command not answered within this (queues, health, sweeps). */
  redisCommandTimeoutMs: number;
  /** Secret: never log it. `describeConfig` leaves it out. */
  adminToken: string;
  /** True when no ALMANAC_ADMIN_TOKEN was given and the development default is in use. */
  adminTokenIsDefault: boolean;
  logLevel: LogLevel;
  /** `pretty`: readable lines (pino-pretty), the default on a terminal; `json` elsewhere (ALMANAC_LOG_FORMAT). */
  logFormat: 'json' | 'pretty';
  queuePrefix: string;
  horizons: { immediateMs: number; hotMs: number };
  maxBodyBytes: number;
  /** A request not fully received (headers and body) within this is answered 408: slow senders. */
  httpRequestTimeoutMs: number;
  /** Proxies whose X-Forwarded-For names the client (Fastify's trustProxy); empty: none. */
  trustProxy: string[];
}

/** Development only; production refuses to start without a real token. */
export const DEV_ADMIN_TOKEN = 'almanac-dev-admin-token';
const MIN_PRODUCTION_TOKEN_LENGTH = 16;

/**
 * Reads and validates every core setting at once; the first bad one throws `ConfigError`
 * naming the variable. Warnings (not errors) are returned for the caller to log.
 */
export function loadConfig(env: Env = process.env, stdoutIsTty = Boolean(process.stdout.isTTY)): AlmanacConfig {
  const production = readSetting(env, 'NODE_ENV') === 'production';
  const immediateMs = readSetting(env, 'ALMANAC_IMMEDIATE_HORIZON_MS');
  const hotMs = readSetting(env, 'ALMANAC_HOT_HORIZON_MS');
  if (immediateMs > hotMs) {
    throw new ConfigError(
      `ALMANAC_IMMEDIATE_HORIZON_MS (${immediateMs}) must not exceed ALMANAC_HOT_HORIZON_MS (${hotMs})`,
    );
  }
  const { token, isDefault } = adminToken(env, production);
  if (production) refusePublishedSecrets(env, token);
  const port = readSetting(env, 'PORT');
  const { adminPort, metricsPort } = extraPorts(env, port);
  return {
    production,
    port,
    adminPort,
    metricsPort,
    database: databaseConfigFromEnv(env),
    redisUrl: readSetting(env, 'REDIS_URL'),
    redisClusterNodes: clusterNodes(env),
    redisCommandTimeoutMs: readSetting(env, 'ALMANAC_REDIS_COMMAND_TIMEOUT_MS'),
    adminToken: token,
    adminTokenIsDefault: isDefault,
    logLevel: readSetting(env, 'ALMANAC_LOG_LEVEL'),
    logFormat: logFormat(readSetting(env, 'ALMANAC_LOG_FORMAT'), stdoutIsTty),
    queuePrefix: readSetting(env, 'ALMANAC_QUEUE_PREFIX'),
    horizons: { immediateMs, hotMs },
    maxBodyBytes: readSetting(env, 'ALMANAC_MAX_BODY_BYTES'),
    httpRequestTimeoutMs: readSetting(env, 'ALMANAC_HTTP_REQUEST_TIMEOUT_MS'),
    trustProxy: readSetting(env, 'ALMANAC_TRUST_PROXY'),
  };
}

function logFormat(chosen: 'auto' | 'json' | 'pretty', stdoutIsTty: boolean): 'json' | 'pretty' {
  if (chosen === 'auto') return stdoutIsTty ? 'pretty' : 'json';
  return chosen;
}

/** ALMANAC_REDIS_CLUSTER_NODES: `host:port` seed nodes, comma-separated (any few of the cluster's). */
function clusterNodes(env: Env): { host: string; port: number }[] | null {
  const list = readSetting(env, 'ALMANAC_REDIS_CLUSTER_NODES');
  if (list.length === 0) return null;
  return list.map((entry) => {
    const i = entry.lastIndexOf(':');
    const port = Number(entry.slice(i + 1));
    if (port < 1 || port > 65535) throw new ConfigError(`ALMANAC_REDIS_CLUSTER_NODES: port out of range in "${entry}"`);
    return { host: entry.slice(0, i), port };
  });
}

/** ALMANAC_ADMIN_PORT and ALMANAC_METRICS_PORT: unset, or a port of their own. */
function extraPorts(env: Env, port: number): { adminPort: number | undefined; metricsPort: number | undefined } {
  const adminPort = readSetting(env, 'ALMANAC_ADMIN_PORT');
  const metricsPort = readSetting(env, 'ALMANAC_METRICS_PORT');
  if (adminPort === port) throw new ConfigError(`ALMANAC_ADMIN_PORT must differ from PORT (both ${port})`);
  if (metricsPort === port) throw new ConfigError(`ALMANAC_METRICS_PORT must differ from PORT (both ${port})`);
  if (metricsPort !== undefined && metricsPort === adminPort) {
    throw new ConfigError(`ALMANAC_METRICS_PORT must differ from ALMANAC_ADMIN_PORT (both ${metricsPort})`);
  }
  return { adminPort, metricsPort };
}

function adminToken(env: Env, production: boolean): { token: string; isDefault: boolean } {
  const token = readSetting(env, 'ALMANAC_ADMIN_TOKEN');
  if (!token) {
    if (production) throw new ConfigError('ALMANAC_ADMIN_TOKEN is required when NODE_ENV=production');
    return { token: DEV_ADMIN_TOKEN, isDefault: true };
  }
  if (production && token.length < MIN_PRODUCTION_TOKEN_LENGTH) {
    // Never echo the token, not even its prefix.
    throw new ConfigError(
      `ALMANAC_ADMIN_TOKEN must be at least ${MIN_PRODUCTION_TOKEN_LENGTH} characters when NODE_ENV=production`,
    );
  }
  return { token, isDefault: false };
}

/** Warnings worth a log line at boot. Never contains the admin token. */
export function configWarnings(config: AlmanacConfig): string[] {
  return config.adminTokenIsDefault
    ? [`ALMANAC_ADMIN_TOKEN is unset: using the development default "${DEV_ADMIN_TOKEN}" (set it before exposing this port)`]
    : [];
}

/** The config as safe to log: URLs without passwords, no admin token. */
export function describeConfig(config: AlmanacConfig): Record<string, unknown> {
  return {
    production: config.production,
    port: config.port,
    adminPort: config.adminPort,
    metricsPort: config.metricsPort,
    databaseUrl: redactUrl(config.database.url),
    dbPoolSize: config.database.poolSize,
    redisUrl: redactUrl(config.redisUrl),
    redisClusterNodes: config.redisClusterNodes?.map((n) => `${n.host}:${n.port}`) ?? null,
    logLevel: config.logLevel,
    queuePrefix: config.queuePrefix,
    horizons: config.horizons,
    maxBodyBytes: config.maxBodyBytes,
  };
}
