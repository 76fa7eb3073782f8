import { type KeyView, TenantKeysRepository } from '@almanac/persistence';
import { Controller, Delete, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AuthEvents } from '../auth/auth-events';
import { AdminAuthGuard } from '../auth/guards';
import { invalid, notFound } from '../http/api-error';
import { ErrorDto } from '../http/error.dto';
import { RequestOver } from '../http/request-deadline.interceptor';
import { Issues, pathId, queryInt, rejectUnknownQuery } from '../http/validation';
import { CreatedKeyDto, KeyDto, KeyListDto } from './credentials.dto';

/** A tenant's API keys: several at once (rotation without downtime), each revocable on every replica within a second. */
@ApiTags('admin')
@ApiBearerAuth('admin')
@Controller('v1/admin/tenants/:id/keys')
@UseGuards(AdminAuthGuard)
export class TenantKeysController {
  constructor(
    private readonly keys: TenantKeysRepository,
    private readonly events: AuthEvents,
  ) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Create another API key for the tenant; the key is shown once' })
  @ApiResponse({ status: 201, type: CreatedKeyDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  async create(@Param('id') id: string): Promise<CreatedKeyDto> {
    const made = await this.keys.create(pathId(id));
    if (!made) throw notFound('tenant');
    return { ...view(made.key), apiKey: made.apiKey };
  }

  @Get()
  @ApiOperation({ summary: "The tenant's keys in id order (prefixes, creation, last use, revocation), never the keys" })
  @ApiQuery({ name: 'limit', required: false, type: 'integer', description: '1..1000, default 100' })
  @ApiQuery({ name: 'cursor', required: false, description: 'the nextCursor of the previous page' })
  @ApiResponse({ status: 200, type: KeyListDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  async list(@Param('id') id: string, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal): Promise<KeyListDto> {
    const issues = new Issues();
    rejectUnknownQuery(query, ['cursor', 'limit'], issues);
    const limit = queryInt(query.limit, 'limit', 100, 1, 1000, issues);
    const afterId = queryInt(query.cursor, 'cursor', 0, 0, 2147483647, issues);
    if (!issues.ok) throw invalid(issues.list);
    const keys = await this.keys.list(pathId(id), { afterId, limit }, over);
    if (!keys) throw notFound('tenant');
    return { items: keys.map(view), nextCursor: keys.length === limit ? String(keys[keys.length - 1].id) : null };
  }

  @Delete(':keyId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke a key: refused with 401 on every API replica within a second' })
  @ApiResponse({ status: 204 })
  @ApiResponse({ status: 404, type: ErrorDto })
  async revoke(@Param('id') id: string, @Param('keyId') keyId: string): Promise<void> {
    const hash = await this.keys.revoke(pathId(id), pathId(keyId));
    if (!hash) throw notFound('key');
    await this.events.keyRevoked(hash);
  }
}

function view(k: KeyView): KeyDto {
  return { id: k.id, prefix: k.prefix, createdAt: k.createdAt.toISOString(), lastUsedAt: k.lastUsedAt?.toISOString() ?? null, revokedAt: k.revokedAt?.toISOString() ?? null };
}
