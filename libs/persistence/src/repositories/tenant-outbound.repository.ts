import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { isSerialId } from '../serial-id';
import { type Db, sql } from '../sql';

/** What the worker needs for a tenant's `http` calls (its allow-list and live signing secrets) and `email` jobs. */
export interface TenantOutboundRecord {
  /** Canonical `scheme://host[:port]` entries (checked by the API as they were set). */
  allowHosts: string[];
  /** Live secrets, newest first: the current one, then the one a rotation retired, while its overlap lasts. */
  secrets: string[];
  /** Whether its `email` jobs may send (under the installation's From address); false unless an operator allowed it. */
  emailAllowed: boolean;
}

/** What anyone may see of a signing secret: never the secret. */
export interface SigningSecretView {
  id: number;
  createdAt: Date;
  /** When it stops being used (set when a rotation retired it); null: current. */
  expiresAt: Date | null;
}

export const SIGNING_SECRET_PREFIX = 'whsec_';

/** `whsec_` and 32 random bytes in base64url. The whole string is the HMAC key. */
function newSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

const UNIQUE_VIOLATION = '23505';

/**
 * A tenant's outbound rules (tenants.http_allow_hosts, tenants.email_allowed) and its signing secrets
 * (tenant_signing_secrets). Secrets leave this class only as the result of `rotate` (shown
 * once by the API) and `forDelivery` (the worker signs with them); statement parameters are
 * redacted from errors by `sql`, so a failed INSERT never logs one.
 */
@Injectable()
export class TenantOutboundRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Replaces the tenant's allow-list; null when there is no such tenant. */
  async setAllowHosts(tenantId: number, hosts: readonly string[], db: Db = this.dataSource): Promise<string[] | null> {
    if (!isSerialId(tenantId)) return null;
    const { rows } = await sql<{ hosts: string[] }>(
      db,
      `UPDATE tenants SET http_allow_hosts = $2::text[] WHERE id = $1 RETURNING http_allow_hosts AS hosts`,
      [tenantId, hosts],
    );
    return rows.length ? rows[0].hosts : null;
  }

  /** Allows or forbids the tenant's `email` jobs; null when there is no such tenant. */
  async setEmailAllowed(tenantId: number, allowed: boolean, db: Db = this.dataSource): Promise<boolean | null> {
    if (!isSerialId(tenantId)) return null;
    const { rows } = await sql<{ allowed: boolean }>(db, `UPDATE tenants SET email_allowed = $2 WHERE id = $1 RETURNING email_allowed AS allowed`, [tenantId, allowed]);
    return rows.length ? rows[0].allowed : null;
  }

  /** The tenant's outbound settings as the admin API shows them; null when there is no such tenant. */
  async settings(tenantId: number, db: Db = this.dataSource): Promise<{ httpAllowHosts: string[]; emailAllowed: boolean } | null> {
    if (!isSerialId(tenantId)) return null;
    const { rows } = await sql<{ hosts: string[]; email: boolean }>(
      db,
      `SELECT http_allow_hosts AS hosts, email_allowed AS email FROM tenants WHERE id = $1`,
      [tenantId],
    );
    return rows.length ? { httpAllowHosts: rows[0].hosts, emailAllowed: rows[0].email } : null;
  }

  /**
   * Makes a new current secret and returns it (the only time it leaves the database except to
   * the worker). The secret it replaces stays live for `overlapMs` (0: retired at once, as for a
   * leaked secret); any older one still in an overlap is retired now, so at most two are ever
   * live. One statement; two rotations at once meet at the unique index on the current secret,
   * and the loser runs again after the winner (so both succeed, in some order). Null: no such tenant.
   */
  async rotateSigningSecret(
    tenantId: number,
    overlapMs: number,
    db: Db = this.dataSource,
  ): Promise<{ secret: string; view: SigningSecretView; previousExpiresAt: Date | null } | null> {
    if (!isSerialId(tenantId)) return null;
    const secret = newSigningSecret();
    const text = `
      WITH t AS (SELECT id FROM tenants WHERE id = $1),
           retired AS (
             UPDATE tenant_signing_secrets s
                SET expires_at = CASE WHEN s.expires_at IS NULL THEN now() + $3 * interval '1 millisecond' ELSE now() END
              WHERE s.tenant_id = (SELECT id FROM t) AND (s.expires_at IS NULL OR s.expires_at > now())
             RETURNING s.expires_at),
           -- Reading retired first retires the old current secret before the new one meets the unique index.
           made AS (INSERT INTO tenant_signing_secrets (tenant_id, secret)
                    SELECT id, $2 FROM t WHERE (SELECT count(*) FROM retired) >= 0 RETURNING id, created_at, expires_at)
      SELECT id, created_at, expires_at, (SELECT max(expires_at) FROM retired WHERE expires_at > now()) AS previous_expires_at FROM made`;
    for (let attempt = 1; ; attempt++) {
      try {
        const { rows } = await sql<{ id: number; created_at: Date; expires_at: Date | null; previous_expires_at: Date | null }>(db, text, [tenantId, secret, overlapMs]);
        if (!rows.length) return null;
        const r = rows[0];
        return { secret, view: { id: r.id, createdAt: r.created_at, expiresAt: r.expires_at }, previousExpiresAt: r.previous_expires_at };
      } catch (err) {
        // A concurrent rotation committed a current secret this statement's snapshot did not see.
        // (Inside a caller's transaction the error has aborted it: nothing to retry there.)
        if (attempt < 3 && (err as { code?: string }).code === UNIQUE_VIOLATION && db instanceof DataSource) continue;
        throw err;
      }
    }
  }

  /** The tenant's secrets, newest first, without the secrets themselves; null: no such tenant. */
  async listSigningSecrets(tenantId: number, db: Db = this.dataSource): Promise<SigningSecretView[] | null> {
    if (!isSerialId(tenantId)) return null;
    const { rows } = await sql<{ tenant: number; id: number | null; created_at: Date; expires_at: Date | null }>(
      db,
      `SELECT t.id AS tenant, s.id, s.created_at, s.expires_at
         FROM tenants t LEFT JOIN tenant_signing_secrets s ON s.tenant_id = t.id WHERE t.id = $1 ORDER BY s.id DESC`,
      [tenantId],
    );
    if (rows.length === 0) return null;
    return rows.filter((r) => r.id !== null).map((r) => ({ id: r.id!, createdAt: r.created_at, expiresAt: r.expires_at }));
  }

  /** The tenant's allow-list, live secrets (newest first) and email permission, in one read; null: no such tenant. */
  async forDelivery(tenantId: number, db: Db = this.dataSource): Promise<TenantOutboundRecord | null> {
    if (!isSerialId(tenantId)) return null;
    const { rows } = await sql<{ hosts: string[]; secrets: string[]; email: boolean }>(
      db,
      `SELECT t.http_allow_hosts AS hosts, t.email_allowed AS email,
              coalesce(array_agg(s.secret ORDER BY s.id DESC) FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets
         FROM tenants t
         LEFT JOIN tenant_signing_secrets s ON s.tenant_id = t.id AND (s.expires_at IS NULL OR s.expires_at > now())
        WHERE t.id = $1
        GROUP BY t.id`,
      [tenantId],
    );
    return rows.length ? { allowHosts: rows[0].hosts, secrets: rows[0].secrets, emailAllowed: rows[0].email } : null;
  }
}

