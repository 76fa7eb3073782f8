import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { TenantAuthGuard } from '../auth/guards';
import { ApiTenantRateLimit, ErrorDto } from '../http/error.dto';
import { refuseQuery } from '../http/validation';
import { KindsService } from './kinds.service';

class KindDto {
  @ApiProperty({ example: 'charge' })
  kind!: string;
  @ApiProperty({ example: 'default', description: 'The worker pool that runs it' })
  pool!: string;
  @ApiProperty({ example: 10000, description: 'Per-attempt deadline' })
  timeoutMs!: number;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'JSON Schema the payload must match (null: any payload)' })
  payloadSchema!: Record<string, unknown> | null;
}

class KindListDto {
  @ApiProperty({ type: [KindDto] })
  items!: KindDto[];

  @ApiProperty({ example: null, nullable: true, type: String, description: 'always null: the registered kinds fit one page' })
  nextCursor!: string | null;
}

@ApiTags('kinds')
@ApiBearerAuth('tenant')
@ApiResponse({ status: 401, type: ErrorDto, description: 'Missing or unknown API key' })
@ApiTenantRateLimit()
@Controller('v1/kinds')
@UseGuards(TenantAuthGuard)
export class KindsController {
  constructor(private readonly kinds: KindsService) {}

  @Get()
  @ApiOperation({ summary: 'The kinds workers have registered', description: 'What POST /v1/jobs accepts, with each payload schema.' })
  @ApiResponse({ status: 200, type: KindListDto })
  async list(@Query() query: Record<string, unknown>): Promise<KindListDto> {
    refuseQuery(query);
    await this.kinds.lookup([]);
    return { items: this.kinds.catalog.all().map(({ kind, pool, timeoutMs, payloadSchema }) => ({ kind, pool, timeoutMs, payloadSchema })), nextCursor: null };
  }
}
