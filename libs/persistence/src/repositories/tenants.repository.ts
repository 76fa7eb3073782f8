import { DEFAULT_SHARE, type KeyPolicy, type KeyReservation, type KindLimit, type TenantShare } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { isSerialId } from '../serial-id';
import { type Db, onConnection, sql } from '../sql';

export interface TenantRecord {
  id: number;
  name: string;
  createdAt: Date;
  /** Per-tenant ingest rate override; null means the configured default. */
  rateLimitPerSecond: number | null;
  /** This tenant's ceiling on schedules; null: the installation's default. */
  maxSchedules: number | null;
  /** Its share of busy pools and its limits (weight 1 and no limits by default). */
  share: TenantShare;
  /** Suspended: its requests are refused (403) and its due jobs held until it is enabled. */
  disabled: boolean;
  /** How long its finished jobs are kept, in seconds; null: the installation's default. */
  retentionSeconds: number | null;
  /** What becomes of a removed job's key. */
  keysAfterRetention: KeyPolicy;
  /** How long a reserved key stays reserved after its job is removed; null: the installation's default. */
  keyReservationSeconds: KeyReservation | null;
  /** What it stores as of the stored-bytes sweep's last pass, and its own quota. */
  storage: TenantStorage;
}

export interface TenantStorage {
  /** Its own quota in bytes; null: the installation's default. */
  maxStoredBytes: number | null;
  storedBytes: number;
  /** When the pass that measured storedBytes ended; null: none has yet. */
  measuredAt: Date | null;
}

/** A change of a tenant's retention (fields left undefined stay). */
export interface RetentionPatch {
  retentionSeconds?: number | null;
  keysAfterRetention?: KeyPolicy;
  keyReservationSeconds?: KeyReservation | null;
}

export const API_KEY_PREFIX = 'alm_';
/** 32 random bytes in base64url (43 characters) after the prefix. */
const API_KEY_SHAPE = /^alm_[A-Za-z0-9_-]{43}$/;

interface TenantRow {
  id: number;
  name: string;
  created_at: Date;
  rate_limit_per_second: number | null;
  max_schedules: number | null;
  weight: number;
  max_concurrency: number | null;
  kind_limits: Record<string, KindLimit> | null;
  disabled_at: Date | null;
  retention_seconds: number | null;
  frees_keys: boolean;
  key_reservation_seconds: number | null;
  keys_reserved_forever: boolean;
  max_stored_bytes: string | null;
  stored_bytes: string;
  stored_bytes_at: Date | null;
}

const COLUMNS =
  'id, name, created_at, rate_limit_per_second, max_schedules, weight, max_concurrency, kind_limits, disabled_at, retention_seconds, frees_keys, ' +
  'key_reservation_seconds, keys_reserved_forever, max_stored_bytes, stored_bytes, stored_bytes_at';
const T_COLUMNS = COLUMNS.split(', ').map((c) => `t.${c}`).join(', ');

/** A new API key: `alm_` and 32 random bytes in base64url; only its sha256 is stored. */
export function newApiKey(): { apiKey: string; hash: Buffer; prefix: string } {
  const apiKey = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  return { apiKey, hash: hashApiKey(apiKey), prefix: keyPrefix(apiKey) };
}

/** What an operator sees of a key: `alm_` and its first 6 characters (36 of its 256 random bits). */
export function keyPrefix(apiKey: string): string {
  return apiKey.slice(0, API_KEY_PREFIX.length + 6);
}

/** Whether a string could be an API key at all (malformed keys never reach the database). */
export function isApiKeyShaped(apiKey: string): boolean {
  return API_KEY_SHAPE.test(apiKey);
}

export function hashApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey, 'utf8').digest();
}

@Injectable()
export class TenantsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Creates a tenant and its API key. The key is returned once and only its sha256 is kept. */
  async create(
    name: string,
    opts: { rateLimitPerSecond?: number | null; maxSchedules?: number | null } = {},
    db: Db = this.dataSource,
  ): Promise<{ tenant: TenantRecord; apiKey: string }> {
    const key = newApiKey();
    const { rows } = await sql<TenantRow>(
      db,
      `WITH t AS (INSERT INTO tenants (name, rate_limit_per_second, max_schedules) VALUES ($1, $2, $3) RETURNING ${COLUMNS}),
            k AS (INSERT INTO tenant_keys (tenant_id, key_hash, prefix) SELECT id, $4, $5 FROM t)
       SELECT ${COLUMNS} FROM t`,
      [name, opts.rateLimitPerSecond ?? null, opts.maxSchedules ?? null, key.hash, key.prefix],
    );
    return { tenant: toTenant(rows[0]), apiKey: key.apiKey };
  }

  /** The tenant owning `apiKey` (a key not revoked), or null. */
  async findByApiKey(apiKey: string, db: Db = this.dataSource): Promise<TenantRecord | null> {
    return (await this.findKey(apiKey, db))?.tenant ?? null;
  }

  /** The tenant and key id of `apiKey` if it is a key not revoked. Malformed keys never reach the database. */
  async findKey(apiKey: string, db: Db = this.dataSource): Promise<{ tenant: TenantRecord; keyId: number } | null> {
    if (!isApiKeyShaped(apiKey)) return null;
    const { rows } = await sql<TenantRow & { key_id: number }>(
      db,
      `SELECT ${T_COLUMNS}, k.id AS key_id FROM tenant_keys k JOIN tenants t ON t.id = k.tenant_id
        WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
      [hashApiKey(apiKey)],
    );
    return rows.length ? { tenant: toTenant(rows[0]), keyId: rows[0].key_id } : null;
  }

  /**
   * A page of tenants in id order, each with its live keys and its jobs counted up to `countCap`
   * (an index-only walk of jobs_tenant_key per tenant: a tenant with millions of jobs costs
   * `countCap` index entries, not millions).
   */
  async list(afterId: number, limit: number, countCap: number, over?: AbortSignal): Promise<(TenantRecord & { keys: number; jobs: number })[]> {
    // Up to `limit` walks of `countCap` jobs: `over`, the caller stopped waiting (onConnection).
    const { rows } = await onConnection(this.dataSource, over, (c) => sql<TenantRow & { keys: number; jobs: number }>(
      c.manager,
      `SELECT ${T_COLUMNS},
              (SELECT count(*)::int FROM tenant_keys k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL) AS keys,
              (SELECT count(*)::int FROM (SELECT 1 FROM jobs j WHERE j.tenant_id = t.id LIMIT $3) c) AS jobs
         FROM tenants t WHERE t.id > $1 ORDER BY t.id LIMIT $2`,
      [afterId, limit, countCap],
    ));
    return rows.map((r) => ({ ...toTenant(r), keys: r.keys, jobs: r.jobs }));
  }

  /** Suspends (true) or enables (false) a tenant; null when there is no such tenant. */
  async setDisabled(id: number, disabled: boolean, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!isSerialId(id)) return null;
    const { rows } = await sql<TenantRow>(
      db,
      `UPDATE tenants SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, now()) END WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, disabled],
    );
    return rows.length ? toTenant(rows[0]) : null;
  }

  /** Changes a tenant's share and limits (fields left undefined stay); null when there is no such tenant. */
  async updateShare(id: number, patch: Partial<TenantShare>, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!isSerialId(id)) return null;
    const { rows } = await sql<TenantRow>(
      db,
      `UPDATE tenants SET weight = CASE WHEN $2 THEN $3::float8 ELSE weight END,
                          max_concurrency = CASE WHEN $4 THEN $5::int ELSE max_concurrency END,
                          kind_limits = CASE WHEN $6 THEN $7::jsonb ELSE kind_limits END
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [
        id,
        patch.weight !== undefined, patch.weight ?? DEFAULT_SHARE.weight,
        patch.maxConcurrency !== undefined, patch.maxConcurrency ?? null,
        patch.kindLimits !== undefined, patch.kindLimits === undefined || patch.kindLimits === null ? null : JSON.stringify(patch.kindLimits),
      ],
    );
    return rows.length ? toTenant(rows[0]) : null;
  }

  /** Changes a tenant's retention; null when there is no such tenant. */
  async updateRetention(id: number, patch: RetentionPatch, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!isSerialId(id)) return null;
    const { rows } = await sql<TenantRow>(
      db,
      `UPDATE tenants SET retention_seconds = CASE WHEN $2 THEN $3::int ELSE retention_seconds END,
                          frees_keys = CASE WHEN $4 THEN $5::boolean ELSE frees_keys END,
                          key_reservation_seconds = CASE WHEN $6 THEN $7::int ELSE key_reservation_seconds END,
                          keys_reserved_forever = CASE WHEN $6 THEN $8::boolean ELSE keys_reserved_forever END
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [
        id,
        patch.retentionSeconds !== undefined, patch.retentionSeconds ?? null,
        patch.keysAfterRetention !== undefined, patch.keysAfterRetention === 'freed',
        patch.keyReservationSeconds !== undefined,
        typeof patch.keyReservationSeconds === 'number' ? patch.keyReservationSeconds : null,
        patch.keyReservationSeconds === 'forever',
      ],
    );
    return rows.length ? toTenant(rows[0]) : null;
  }

  /** Sets a tenant's own stored-bytes quota (null: the installation's default); null when there is no such tenant. */
  async setMaxStoredBytes(id: number, maxStoredBytes: number | null, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!isSerialId(id)) return null;
    const { rows } = await sql<TenantRow>(db, `UPDATE tenants SET max_stored_bytes = $2 WHERE id = $1 RETURNING ${COLUMNS}`, [id, maxStoredBytes]);
    return rows.length ? toTenant(rows[0]) : null;
  }

  /**
   * Every tenant whose share differs from the default (weight 1, no limits, not suspended): what
   * the dispatcher keeps in memory. Read once a second; tenants at the default are not read at all.
   */
  async listShares(db: Db = this.dataSource): Promise<Map<number, TenantShare>> {
    const { rows } = await sql<TenantRow>(
      db,
      `SELECT id, weight, max_concurrency, kind_limits, disabled_at FROM tenants
        WHERE weight <> 1 OR max_concurrency IS NOT NULL OR kind_limits IS NOT NULL OR disabled_at IS NOT NULL`,
    );
    return new Map(rows.map((r) => [r.id, toShare(r)]));
  }

  async findById(id: number, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!isSerialId(id)) return null;
    const { rows } = await sql<TenantRow>(db, `SELECT ${COLUMNS} FROM tenants WHERE id = $1`, [id]);
    return rows.length ? toTenant(rows[0]) : null;
  }
}

function toTenant(r: TenantRow): TenantRecord {
  return {
    id: r.id, name: r.name, createdAt: r.created_at, rateLimitPerSecond: r.rate_limit_per_second, maxSchedules: r.max_schedules,
    share: toShare(r), disabled: r.disabled_at !== null,
    retentionSeconds: r.retention_seconds, keysAfterRetention: r.frees_keys ? 'freed' : 'reserved',
    keyReservationSeconds: r.keys_reserved_forever ? 'forever' : r.key_reservation_seconds,
    storage: {
      maxStoredBytes: r.max_stored_bytes === null ? null : Number(r.max_stored_bytes),
      storedBytes: Number(r.stored_bytes),
      measuredAt: r.stored_bytes_at,
    },
  };
}

function toShare(r: Pick<TenantRow, 'weight' | 'max_concurrency' | 'kind_limits' | 'disabled_at'>): TenantShare {
  return { weight: Number(r.weight), maxConcurrency: r.max_concurrency, kindLimits: r.kind_limits, held: r.disabled_at !== null };
}
