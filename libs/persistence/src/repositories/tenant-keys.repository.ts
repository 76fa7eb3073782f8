import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isSerialId } from '../serial-id';
import { type Db, onConnection, sql } from '../sql';
import { newApiKey } from './tenants.repository';

/** What anyone may see of a key: never the key, never its hash. */
export interface KeyView {
  id: number;
  /** `alm_` and the key's first 6 characters, to tell keys apart ('' for keys made before prefixes were kept). */
  prefix: string;
  createdAt: Date;
  /** Last accepted use, to within a minute (each API replica writes it at most once a minute). */
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

interface KeyRow {
  id: number;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const COLUMNS = 'id, prefix, created_at, last_used_at, revoked_at';

/** A tenant's API keys (table tenant_keys): several per tenant, each revocable, only sha256 kept. */
@Injectable()
export class TenantKeysRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A new key for the tenant, returned once; null when there is no such tenant. */
  async create(tenantId: number, db: Db = this.dataSource): Promise<{ key: KeyView; apiKey: string } | null> {
    if (!isSerialId(tenantId)) return null;
    const k = newApiKey();
    const { rows } = await sql<KeyRow>(
      db,
      `INSERT INTO tenant_keys (tenant_id, key_hash, prefix) SELECT id, $2, $3 FROM tenants WHERE id = $1 RETURNING ${COLUMNS}`,
      [tenantId, k.hash, k.prefix],
    );
    return rows.length ? { key: toView(rows[0]), apiKey: k.apiKey } : null;
  }

  /** The tenant's keys, oldest first, revoked ones included (null: no such tenant). */
  async list(tenantId: number, page: { afterId?: number; limit?: number } = {}, over?: AbortSignal): Promise<KeyView[] | null> {
    if (!isSerialId(tenantId)) return null;
    // `over`: the caller stopped waiting (onConnection).
    const { rows } = await onConnection(this.dataSource, over, (c) => sql<KeyRow & { tenant: number | null }>(
      c.manager,
      `SELECT t.id AS tenant, k.id, k.prefix, k.created_at, k.last_used_at, k.revoked_at
         FROM tenants t LEFT JOIN LATERAL (
           SELECT id, prefix, created_at, last_used_at, revoked_at FROM tenant_keys
            WHERE tenant_id = t.id AND id > $2 ORDER BY id LIMIT $3) k ON true
        WHERE t.id = $1 ORDER BY k.id`,
      [tenantId, page.afterId ?? 0, page.limit ?? 1000],
    ));
    if (rows.length === 0) return null;
    return rows.filter((r) => r.id !== null).map(toView);
  }

  /**
   * Revokes one of the tenant's keys. Returns its sha256 (base64, what the API's key cache is keyed
   * by) so every replica can forget it at once, or null when the tenant has no such key. Revoking
   * a revoked key again changes nothing and answers the same.
   */
  async revoke(tenantId: number, keyId: number, db: Db = this.dataSource): Promise<string | null> {
    if (!isSerialId(tenantId) || !isSerialId(keyId)) return null;
    const { rows } = await sql<{ key_hash: Buffer }>(
      db,
      `UPDATE tenant_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND tenant_id = $2 RETURNING key_hash`,
      [keyId, tenantId],
    );
    return rows.length ? rows[0].key_hash.toString('base64') : null;
  }

  /**
   * A page of keys' hashes (sha256 in base64, as the API's key cache is keyed) with id above
   * `afterId`, in id order: live ones, and revoked ones once settled (so a reader's floor moves
   * past them). `settled`: inserted over `settleMs` ago by the database's clock, so every insert
   * that took a lower id has committed or failed by now (inserts are one statement).
   */
  async keyHashesAfter(afterId: number, limit: number, settleMs: number, db: Db = this.dataSource): Promise<{ id: number; hash: string; live: boolean; settled: boolean }[]> {
    const { rows } = await sql<{ id: number; key_hash: Buffer; live: boolean; settled: boolean }>(
      db,
      `SELECT id, key_hash, revoked_at IS NULL AS live, created_at < now() - make_interval(secs => $3::float8 / 1000) AS settled
         FROM tenant_keys WHERE id > $1 AND (revoked_at IS NULL OR created_at < now() - make_interval(secs => $3::float8 / 1000))
         ORDER BY id LIMIT $2`,
      [afterId, limit, settleMs],
    );
    return rows.map((r) => ({ id: r.id, hash: r.key_hash.toString('base64'), live: r.live, settled: r.settled }));
  }

  /** Records the keys used since the last call (batched by the API, at most once a minute per key). */
  async touch(keyIds: readonly number[], at: Date, db: Db = this.dataSource): Promise<void> {
    if (keyIds.length === 0) return;
    await sql(db, `UPDATE tenant_keys SET last_used_at = $2 WHERE id = ANY($1::int[]) AND (last_used_at IS NULL OR last_used_at < $2)`, [keyIds, at]);
  }
}


function toView(r: KeyRow): KeyView {
  return { id: r.id, prefix: r.prefix, createdAt: r.created_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at };
}
