import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tenants and trust (issue 16): a tenant holds any number of API keys, each revocable, and a
 * tenant can be suspended.
 * - tenant_keys: one row per key, only its sha256 kept (as before), with a short prefix of the
 *   key so an operator can tell keys apart, creation, last use (written at most once a minute
 *   per key per API replica) and revocation. Revoked keys are kept: an audit trail, and a
 *   revoked key presented again is told apart from one that never existed only in the logs.
 * - tenants.disabled_at: a suspended tenant's requests get 403 and its due jobs are held
 *   (parked, still queued) until it is enabled again.
 * Existing keys move over with an empty prefix (only their hash was ever stored).
 */
export class TenantKeys1764400060000 implements MigrationInterface {
  name = 'TenantKeys1764400060000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE tenant_keys (
        id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id integer NOT NULL REFERENCES tenants (id),
        key_hash bytea NOT NULL UNIQUE,
        prefix text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      )`);
    await q.query(`CREATE INDEX tenant_keys_tenant ON tenant_keys (tenant_id, id)`);
    await q.query(`INSERT INTO tenant_keys (tenant_id, key_hash, prefix, created_at) SELECT id, api_key_hash, '', created_at FROM tenants`);
    await q.query(`ALTER TABLE tenants DROP COLUMN api_key_hash, ADD COLUMN disabled_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tenants ADD COLUMN api_key_hash bytea, DROP COLUMN disabled_at`);
    await q.query(`UPDATE tenants t SET api_key_hash = (SELECT key_hash FROM tenant_keys k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL ORDER BY id LIMIT 1)`);
    await q.query(`DROP TABLE tenant_keys`);
  }
}
