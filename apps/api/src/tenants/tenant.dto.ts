import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class CreateTenantDto {
  @ApiProperty({ example: 'acme', minLength: 1, maxLength: 200 })
  name!: string;

  @ApiPropertyOptional({
    example: 5000,
    minimum: 1,
    description: 'Jobs per second this tenant may ingest; omit for the configured default (ALMANAC_RATE_LIMIT_PER_SECOND).',
  })
  rateLimitPerSecond?: number;

  @ApiPropertyOptional({
    example: 50000,
    minimum: 1,
    description: 'Schedules this tenant may hold; omit for the configured default (ALMANAC_MAX_SCHEDULES_PER_TENANT, 10,000).',
  })
  maxSchedules?: number;
}

export class CreatedTenantDto {
  @ApiProperty({ example: 1 })
  id!: number;

  @ApiProperty({ example: 'acme' })
  name!: string;

  @ApiProperty({
    example: 'alm_3q2Vb1Xk0oLxN4v7m8cZ5n6b7v8c9x0z1a2s3d4f5g6',
    description: 'Shown once; only its sha256 is stored. Send it as `Authorization: Bearer <apiKey>`.',
  })
  apiKey!: string;

  @ApiProperty({ example: null, nullable: true, type: Number })
  rateLimitPerSecond!: number | null;

  @ApiProperty({ example: null, nullable: true, type: Number })
  maxSchedules!: number | null;
}

export class KindLimitDto {
  @ApiPropertyOptional({ example: 50, minimum: 0.01, description: 'Jobs of this kind started per second, across every worker (bursts of a tenth of a second).' })
  perSecond?: number;

  @ApiPropertyOptional({ example: 20, minimum: 1, description: 'Jobs of this kind handed to workers and not finished, at once.' })
  concurrency?: number;
}

export class UpdateTenantDto {
  @ApiPropertyOptional({ example: 3, minimum: 0.01, maximum: 1000, description: "Share of a busy pool's capacity relative to other waiting tenants (default 1)." })
  weight?: number;

  @ApiPropertyOptional({ example: 100, minimum: 1, nullable: true, type: Number, description: 'Jobs handed to workers and not finished, at once, across all kinds; null removes the cap.' })
  maxConcurrency?: number | null;

  @ApiPropertyOptional({
    nullable: true,
    type: 'object',
    additionalProperties: { $ref: '#/components/schemas/KindLimitDto' },
    example: { http: { perSecond: 50, concurrency: 20 } },
    description: 'Per-kind caps for this tenant; replaces the whole map; null removes every kind limit.',
  })
  kindLimits?: Record<string, KindLimitDto> | null;

  @ApiPropertyOptional({ example: true, description: 'true suspends the tenant (403 for its requests, its due jobs held); false enables it again' })
  disabled?: boolean;

  @ApiPropertyOptional({
    example: 7_776_000, minimum: 3600, maximum: 315_360_000, nullable: true, type: 'integer',
    description: "How long the tenant's finished jobs (succeeded, dead, cancelled) and their attempts are kept, in seconds; null: the installation's default (ALMANAC_RETENTION_DEFAULT_SECONDS, 30 days).",
  })
  retentionSeconds?: number | null;

  @ApiPropertyOptional({
    enum: ['reserved', 'freed'], example: 'reserved',
    description: "What becomes of a removed job's key. reserved (default): a replay is refused with 409 saying when the job was removed and how it ended. freed: the key may name a new job once its old job is removed (keys retired while the tenant reserved them stay reserved).",
  })
  keysAfterRetention?: 'reserved' | 'freed';

  @ApiPropertyOptional({
    oneOf: [{ type: 'integer', minimum: 86_400, maximum: 315_360_000 }, { type: 'string', enum: ['forever'] }],
    nullable: true,
    example: 34_560_000,
    description:
      "How long a reserved key stays reserved after its job is removed: seconds (rounded up to whole days), \"forever\", or null for the installation's default " +
      '(ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS, 400 days). Fixed for each key when its job is removed: a change applies to keys removed from then on.',
  })
  keyReservationSeconds?: number | 'forever' | null;

  @ApiPropertyOptional({
    type: [String],
    nullable: true,
    maxItems: 100,
    example: ['https://hooks.acme.com', 'https://*.acme-partners.io:8443'],
    description:
      'Origins this tenant\'s `http` jobs may call, `scheme://host[:port]` (the port defaults to the scheme\'s; `*.` before the host for its subdomains, not the host itself). ' +
      'Intersected with the installation\'s ALMANAC_HTTP_ALLOW_HOSTS; replaces the whole list; [] or null allows nothing (the default).',
  })
  httpAllowHosts?: string[] | null;

  @ApiPropertyOptional({
    type: Boolean,
    example: true,
    description:
      "Whether this tenant's `email` jobs may send: the messages go out under the installation's From address (ALMANAC_EMAIL_FROM). " +
      'false (the default): its email jobs are discarded, nothing sent.',
  })
  emailAllowed?: boolean;

  @ApiPropertyOptional({
    example: 53_687_091_200, minimum: 1_048_576, maximum: 1_125_899_906_842_624, nullable: true, type: 'integer',
    description:
      "Bytes the tenant may store (payloads, results and errors of its jobs and their attempts, its schedules' payloads); null: the installation's default " +
      '(ALMANAC_STORED_BYTES_QUOTA, 10 GiB). Past it, new jobs and schedule payloads are refused with 413; what it has keeps running.',
  })
  maxStoredBytes?: number | null;
}

export class TenantStorageDto {
  @ApiProperty({ example: 734_003_200, description: "what the tenant stores, as of the promoter's last pass over its rows" })
  storedBytes!: number;

  @ApiProperty({ example: 10_737_418_240, description: 'the quota that applies: its own maxStoredBytes, or the installation default' })
  quotaBytes!: number;

  @ApiProperty({ example: null, nullable: true, type: Number, description: "its own quota; null: the installation's default" })
  maxStoredBytes!: number | null;

  @ApiProperty({ example: '2026-12-04T09:00:00.000Z', nullable: true, type: String, description: 'when the pass that measured storedBytes ended; null: none has yet' })
  measuredAt!: string | null;
}

export class TenantDto {
  @ApiProperty({ example: 1 })
  id!: number;

  @ApiProperty({ example: 'acme' })
  name!: string;

  @ApiProperty({ example: null, nullable: true, type: Number })
  rateLimitPerSecond!: number | null;

  @ApiProperty({ example: null, nullable: true, type: Number })
  maxSchedules!: number | null;

  @ApiProperty({ example: 1 })
  weight!: number;

  @ApiProperty({ example: null, nullable: true, type: Number })
  maxConcurrency!: number | null;

  @ApiProperty({ nullable: true, type: 'object', additionalProperties: { $ref: '#/components/schemas/KindLimitDto' }, example: null })
  kindLimits!: Record<string, KindLimitDto> | null;

  @ApiProperty({ example: false, description: 'suspended: its requests get 403 and its due jobs are held' })
  disabled!: boolean;

  @ApiProperty({ example: null, nullable: true, type: Number, description: "its finished jobs' retention in seconds; null: the installation's default" })
  retentionSeconds!: number | null;

  @ApiProperty({ enum: ['reserved', 'freed'], example: 'reserved' })
  keysAfterRetention!: 'reserved' | 'freed';

  @ApiProperty({
    oneOf: [{ type: 'integer' }, { type: 'string', enum: ['forever'] }],
    nullable: true,
    example: null,
    description: "how long a reserved key stays reserved after its job is removed, in seconds, or \"forever\"; null: the installation's default",
  })
  keyReservationSeconds!: number | 'forever' | null;

  @ApiProperty({ type: TenantStorageDto })
  storage!: TenantStorageDto;

  @ApiPropertyOptional({ type: [String], example: ['https://hooks.acme.com'], description: "its `http` jobs' allow-list (in GET and PATCH answers of one tenant)" })
  httpAllowHosts?: string[];

  @ApiPropertyOptional({ example: false, description: "whether its `email` jobs may send (in GET and PATCH answers of one tenant)" })
  emailAllowed?: boolean;
}

export class TenantSummaryDto extends TenantDto {
  @ApiProperty({ example: '2026-12-01T09:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ example: 2, description: 'keys not revoked' })
  keys!: number;

  @ApiProperty({ example: 1234, description: 'its jobs, counted up to 10,000 (then `jobsAtLeast` is true)' })
  jobs!: number;

  @ApiProperty({ example: false })
  jobsAtLeast!: boolean;
}

export class TenantListDto {
  @ApiProperty({ type: [TenantSummaryDto] })
  items!: TenantSummaryDto[];

  @ApiProperty({ example: '42', nullable: true, type: String, description: 'pass as `cursor` for the next page; null on the last' })
  nextCursor!: string | null;
}
