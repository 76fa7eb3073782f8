import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** A tenant's credentials as the admin API shows them: its signing secrets and its API keys (never their secret part, once made). */
export class CreateSigningSecretDto {
  @ApiPropertyOptional({
    example: 86400,
    minimum: 0,
    maximum: 604800,
    description: 'How long the secret being replaced stays valid, its signature still sent beside the new one (default 86400: a day). 0 retires it at once (a leaked secret).',
  })
  overlapSeconds?: number;
}

export class SigningSecretDto {
  @ApiProperty({ example: 4 })
  id!: number;

  @ApiProperty({ example: '2026-12-01T09:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ example: null, nullable: true, type: String, description: 'when it stops being valid; null: the current secret' })
  expiresAt!: string | null;
}

export class CreatedSigningSecretDto extends SigningSecretDto {
  @ApiProperty({
    example: 'whsec_3q2Vb1Xk0oLxN4v7m8cZ5n6b7v8c9x0z1a2s3d4f5g6',
    description: 'Shown once. Receivers verify Almanac-Signature with it (HMAC-SHA256 of "<t>\\n<method>\\n<url>\\n<Idempotency-Key>\\n<body>", the whole string as the key; docs/api.md shows how).',
  })
  secret!: string;

  @ApiProperty({ example: '2026-12-02T09:00:00.000Z', nullable: true, type: String, description: 'until when the secret it replaced stays valid; null: none does' })
  previousExpiresAt!: string | null;
}

export class SigningSecretListDto {
  @ApiProperty({ type: [SigningSecretDto] })
  items!: SigningSecretDto[];

  @ApiProperty({ example: null, nullable: true, type: String, description: 'always null: the secrets fit one page' })
  nextCursor!: string | null;
}

export class KeyDto {
  @ApiProperty({ example: 3 })
  id!: number;

  @ApiProperty({ example: 'alm_3q2Vb1', description: "`alm_` and the key's first 6 characters, to tell keys apart ('' for keys made before prefixes were kept)" })
  prefix!: string;

  @ApiProperty({ example: '2026-12-01T09:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ example: '2026-12-01T09:05:00.000Z', nullable: true, type: String, description: 'last accepted use, to within a minute' })
  lastUsedAt!: string | null;

  @ApiProperty({ example: null, nullable: true, type: String })
  revokedAt!: string | null;
}

export class CreatedKeyDto extends KeyDto {
  @ApiProperty({ example: 'alm_3q2Vb1Xk0oLxN4v7m8cZ5n6b7v8c9x0z1a2s3d4f5g6', description: 'Shown once; only its sha256 is stored.' })
  apiKey!: string;
}

export class KeyListDto {
  @ApiProperty({ type: [KeyDto] })
  items!: KeyDto[];

  @ApiProperty({ example: null, nullable: true, type: String, description: 'pass as `cursor` for the next page; null on the last' })
  nextCursor!: string | null;
}
