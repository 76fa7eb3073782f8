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
