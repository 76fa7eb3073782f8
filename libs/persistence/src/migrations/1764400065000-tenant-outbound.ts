import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-tenant outbound rules for the `http` kind and signed deliveries (issue 16 items 3-4).
 * - tenants.http_allow_hosts: the tenant's allow-list (`scheme://host[:port]`, canonical, at
 *   most 100), intersected with the installation's ALMANAC_HTTP_ALLOW_HOSTS. Empty (the default)
 *   allows nothing: a tenant's http jobs call nowhere until an operator lists its receivers.
 * - tenant_signing_secrets: one row per secret. A table rather than columns on tenants so the
 *   secrets can be granted apart from the rest of the tenant row (a reporting role may read
 *   tenants and never secrets), and so a rotation keeps its history (created, retired). The
 *   secret is stored as is, not hashed: the worker must be able to sign with it. The live
 *   secrets of a tenant are the one with no expires_at (current, at most one: the unique index)
 *   and any whose expires_at is still ahead (the overlap of a rotation).
 */
export class TenantOutbound1764400065000 implements MigrationInterface {
  name = 'TenantOutbound1764400065000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tenants ADD COLUMN http_allow_hosts text[] NOT NULL DEFAULT '{}'
                     CONSTRAINT tenants_http_allow_hosts_max CHECK (cardinality(http_allow_hosts) <= 100)`);
    await q.query(`
      CREATE TABLE tenant_signing_secrets (
        id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id integer NOT NULL REFERENCES tenants (id),
        secret text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz
      )`);
    await q.query(`CREATE INDEX tenant_signing_secrets_tenant ON tenant_signing_secrets (tenant_id, id)`);
    await q.query(`CREATE UNIQUE INDEX tenant_signing_secrets_current ON tenant_signing_secrets (tenant_id) WHERE expires_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE tenant_signing_secrets`);
    await q.query(`ALTER TABLE tenants DROP COLUMN http_allow_hosts`);
  }
}
