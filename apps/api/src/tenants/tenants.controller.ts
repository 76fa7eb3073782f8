import { type TenantShare, validateKindLimits, validateMaxConcurrency, validateWeight } from '@almanac/domain';
import { type TenantRecord, TenantsRepository } from '@almanac/persistence';
import { Body, Controller, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiExtraModels, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminAuthGuard } from '../auth/guards';
import { ApiJsonBodyErrors, ErrorDto } from '../http/error.dto';
import { invalid, notFound } from '../http/api-error';
import { intInRange, isPlainObject, Issues, rejectUnknown } from '../http/validation';
import { CreatedTenantDto, CreateTenantDto, KindLimitDto, TenantDto, UpdateTenantDto } from './tenant.dto';

@ApiTags('admin')
@ApiExtraModels(KindLimitDto)
@ApiBearerAuth('admin')
@Controller('v1/admin/tenants')
@UseGuards(AdminAuthGuard)
export class TenantsController {
  constructor(private readonly tenants: TenantsRepository) {}

  @Post()
  @ApiJsonBodyErrors()
  @HttpCode(201)
  @ApiOperation({ summary: 'Create a tenant and its API key (admin token required)' })
  @ApiBody({ type: CreateTenantDto })
  @ApiResponse({ status: 201, type: CreatedTenantDto })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 401, type: ErrorDto })
  async create(@Body() body: unknown): Promise<CreatedTenantDto> {
    const issues = new Issues();
    let name: string | undefined;
    let rate: number | undefined;
    let maxSchedules: number | undefined;
    if (!isPlainObject(body)) {
      issues.add('body', 'type', 'body must be a JSON object');
    } else {
      rejectUnknown(body, ['name', 'rateLimitPerSecond', 'maxSchedules'], issues);
      if (typeof body.name !== 'string' || body.name.trim() === '' || body.name.length > 200) {
        issues.add('name', body.name === undefined ? 'required' : 'string', 'name must be a non-empty string of at most 200 characters');
      } else if (body.name.includes('\u0000')) {
        issues.add('name', 'charset', 'name must not contain U+0000');
      } else {
        name = body.name.trim();
      }
      if (body.rateLimitPerSecond !== undefined && body.rateLimitPerSecond !== null) {
        rate = intInRange(body.rateLimitPerSecond, 'rateLimitPerSecond', 1, 10_000_000, issues);
      }
      if (body.maxSchedules !== undefined && body.maxSchedules !== null) {
        maxSchedules = intInRange(body.maxSchedules, 'maxSchedules', 1, 100_000_000, issues);
      }
    }
    if (!issues.ok || name === undefined) throw invalid(issues.list);
    const { tenant, apiKey } = await this.tenants.create(name, { rateLimitPerSecond: rate ?? null, maxSchedules: maxSchedules ?? null });
    return { id: tenant.id, name: tenant.name, apiKey, rateLimitPerSecond: tenant.rateLimitPerSecond, maxSchedules: tenant.maxSchedules };
  }

  @Patch(':id')
  @ApiJsonBodyErrors()
  @ApiOperation({ summary: "Change a tenant's share of busy pools and its limits (admin token required)" })
  @ApiBody({ type: UpdateTenantDto })
  @ApiResponse({ status: 200, type: TenantDto })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  async update(@Param('id') id: string, @Body() body: unknown): Promise<TenantDto> {
    const issues = new Issues();
    const patch: Partial<TenantShare> = {};
    if (!isPlainObject(body)) {
      issues.add('body', 'type', 'body must be a JSON object');
    } else {
      rejectUnknown(body, ['weight', 'maxConcurrency', 'kindLimits'], issues);
      if (body.weight !== undefined) patch.weight = issues.run(() => validateWeight(body.weight));
      if (body.maxConcurrency !== undefined) patch.maxConcurrency = issues.run(() => validateMaxConcurrency(body.maxConcurrency));
      if (body.kindLimits !== undefined) patch.kindLimits = issues.run(() => validateKindLimits(body.kindLimits));
      if (issues.ok && Object.keys(patch).length === 0) issues.add('body', 'required', 'body must set weight, maxConcurrency or kindLimits');
    }
    if (!issues.ok) throw invalid(issues.list);
    const tenant = /^[1-9][0-9]{0,9}$/.test(id) ? await this.tenants.updateShare(Number(id), patch) : null;
    if (!tenant) throw notFound('tenant');
    return view(tenant);
  }
}

function view(t: TenantRecord): TenantDto {
  return {
    id: t.id, name: t.name, rateLimitPerSecond: t.rateLimitPerSecond, maxSchedules: t.maxSchedules,
    weight: t.share.weight, maxConcurrency: t.share.maxConcurrency, kindLimits: t.share.kindLimits,
  };
}
