import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Typed reads of tenants (admin views); writes go through TenantsRepository. */
@Entity({ name: 'tenants' })
export class TenantEntity {
  @PrimaryColumn({ type: 'integer' })
  id!: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'rate_limit_per_second', type: 'integer', nullable: true })
  rateLimitPerSecond!: number | null;

  @Column({ type: 'text' })
  name!: string;

  /** sha256 of the API key; the key itself is never stored. */
  @Column({ name: 'api_key_hash', type: 'bytea', select: false })
  apiKeyHash!: Buffer;
}
