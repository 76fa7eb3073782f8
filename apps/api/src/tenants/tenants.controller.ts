import {
  parseHostRules,
  type TenantShare,
  validateKeyPolicy,
  validateKeyReservation,
  validateKindLimits,
  validateMaxConcurrency,
  validateRetentionSeconds,
  validateStoredBytesQuota,
  validateWeight,
} from '@almanac/domain';
import { type RetentionPatch, type SigningSecretView, TenantOutboundRepository, type TenantRecord, TenantsRepository } from '@almanac/persistence';
import { Body, Controller, Get, HttpCode, Inject, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiExtraModels, ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { AuthEvents } from '../auth/auth-events';
import { AdminAuthGuard } from '../auth/guards';
import { ApiJsonBodyErrors, ErrorDto } from '../http/error.dto';
import { RequestOver } from '../http/request-deadline.interceptor';
import { invalid, notFound } from '../http/api-error';
import { intInRange, isPlainObject, Issues, pathId, queryInt, refuseQuery, rejectUnknown, rejectUnknownQuery } from '../http/validation';
import { DataSource } from 'typeorm';
import { storedBytesQuota } from './stored-bytes-quota';
import { CreatedSigningSecretDto, CreateSigningSecretDto, SigningSecretDto, SigningSecretListDto } from './credentials.dto';
import { CreatedTenantDto, CreateTenantDto, KindLimitDto, TenantDto, TenantListDto, UpdateTenantDto } from './tenant.dto';

/** Jobs are counted per tenant up to this (an index-only walk each): a listing page stays fast beside tenants with millions. */
const JOB_COUNT_CAP = 10_000;
/** How long a rotated-out signing secret stays valid (and is still sent) by default, and at most. */
const DEFAULT_OVERLAP_SECONDS = 86_400;
const MAX_OVERLAP_SECONDS = 7 * 86_400;

@ApiTags('admin')
@ApiExtraModels(KindLimitDto)
@ApiBearerAuth('admin')
@Controller('v1/admin/tenants')
@UseGuards(AdminAuthGuard)
export class TenantsController {
  private readonly outbound: TenantOutboundRepository;

  constructor(
    private readonly tenants: TenantsRepository,
    private readonly events: AuthEvents,
    dataSource: DataSource,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
  ) {
    this.outbound = new TenantOutboundRepository(dataSource);
  }

  @Get()
  @ApiOperation({ summary: 'List tenants in id order, with their keys and job counts (admin token required)' })
  @ApiQuery({ name: 'cursor', required: false, description: 'the nextCursor of the previous page' })
  @ApiQuery({ name: 'limit', required: false, type: 'integer', description: '1–200, default 50' })
  @ApiResponse({ status: 200, type: TenantListDto })
  async list(@Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal): Promise<TenantListDto> {
    const issues = new Issues();
    rejectUnknownQuery(query, ['cursor', 'limit'], issues);
    const after = queryInt(query.cursor, 'cursor', 0, 0, 2147483647, issues);
    const limit = queryInt(query.limit, 'limit', 50, 1, 200, issues);
    if (!issues.ok) throw invalid(issues.list);
    const rows = await this.tenants.list(after, limit, JOB_COUNT_CAP + 1, over);
    return {
      items: rows.map((t) => ({
        ...this.view(t), createdAt: t.createdAt.toISOString(), keys: t.keys,
        jobs: Math.min(t.jobs, JOB_COUNT_CAP), jobsAtLeast: t.jobs > JOB_COUNT_CAP,
      })),
      nextCursor: rows.length === limit ? String(rows[rows.length - 1].id) : null,
    };
  }

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

  private view(t: TenantRecord): TenantDto {
    return {
      id: t.id, name: t.name, rateLimitPerSecond: t.rateLimitPerSecond, maxSchedules: t.maxSchedules,
      weight: t.share.weight, maxConcurrency: t.share.maxConcurrency, kindLimits: t.share.kindLimits, disabled: t.disabled,
      retentionSeconds: t.retentionSeconds, keysAfterRetention: t.keysAfterRetention, keyReservationSeconds: t.keyReservationSeconds,
      storage: {
        storedBytes: t.storage.storedBytes, quotaBytes: storedBytesQuota(t, this.settings.storedBytesQuota),
        maxStoredBytes: t.storage.maxStoredBytes, measuredAt: t.storage.measuredAt?.toISOString() ?? null,
      },
    };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One tenant: its limits, share, retention, allow-list, email permission and what it stores against its quota (admin token required)' })
  @ApiResponse({ status: 200, type: TenantDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  async get(@Param('id') id: string, @Query() query: Record<string, unknown>): Promise<TenantDto> {
    refuseQuery(query);
    const tenant = await this.tenants.findById(pathId(id));
    if (!tenant) throw notFound('tenant');
    return { ...this.view(tenant), ...(await this.outbound.settings(tenant.id)) };
  }

  @Patch(':id')
  @ApiJsonBodyErrors()
  @ApiOperation({ summary: "Change a tenant's share of busy pools and its limits, its http allow-list, its email permission, or suspend it (admin token required)" })
  @ApiBody({ type: UpdateTenantDto })
  @ApiResponse({ status: 200, type: TenantDto })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  async update(@Param('id') id: string, @Body() body: unknown): Promise<TenantDto> {
    const issues = new Issues();
    const patch: Partial<TenantShare> = {};
    const retention: RetentionPatch = {};
    let maxStoredBytes: number | null | undefined;
    let hosts: string[] | undefined;
    if (!isPlainObject(body)) {
      issues.add('body', 'type', 'body must be a JSON object');
    } else {
      rejectUnknown(body, ['weight', 'maxConcurrency', 'kindLimits', 'disabled', 'httpAllowHosts', 'emailAllowed', 'retentionSeconds', 'keysAfterRetention', 'keyReservationSeconds', 'maxStoredBytes'], issues);
      if (body.disabled !== undefined && typeof body.disabled !== 'boolean') issues.add('disabled', 'type', 'disabled must be true or false');
      if (body.emailAllowed !== undefined && typeof body.emailAllowed !== 'boolean') issues.add('emailAllowed', 'type', 'emailAllowed must be true or false');
      if (body.weight !== undefined) patch.weight = issues.run(() => validateWeight(body.weight));
      if (body.maxConcurrency !== undefined) patch.maxConcurrency = issues.run(() => validateMaxConcurrency(body.maxConcurrency));
      if (body.kindLimits !== undefined) patch.kindLimits = issues.run(() => validateKindLimits(body.kindLimits));
      if (body.retentionSeconds !== undefined) retention.retentionSeconds = issues.run(() => validateRetentionSeconds(body.retentionSeconds));
      if (body.keysAfterRetention !== undefined) retention.keysAfterRetention = issues.run(() => validateKeyPolicy(body.keysAfterRetention));
      if (body.keyReservationSeconds !== undefined) retention.keyReservationSeconds = issues.run(() => validateKeyReservation(body.keyReservationSeconds));
      if (body.maxStoredBytes !== undefined) maxStoredBytes = issues.run(() => validateStoredBytesQuota(body.maxStoredBytes));
      if (body.httpAllowHosts !== undefined) {
        hosts = issues.run(() => (body.httpAllowHosts === null ? [] : parseHostRules(body.httpAllowHosts, 'httpAllowHosts').map((r) => r.text)));
      }
      if (issues.ok && Object.keys(patch).length === 0 && Object.keys(retention).length === 0 && body.disabled === undefined && hosts === undefined && body.maxStoredBytes === undefined && body.emailAllowed === undefined) {
        issues.add('body', 'required', 'body must set weight, maxConcurrency, kindLimits, retentionSeconds, keysAfterRetention, keyReservationSeconds, maxStoredBytes, httpAllowHosts, emailAllowed or disabled');
      }
    }
    if (!issues.ok) throw invalid(issues.list);
    const disabled = isPlainObject(body) && typeof body.disabled === 'boolean' ? body.disabled : undefined;
    const emailAllowed = isPlainObject(body) && typeof body.emailAllowed === 'boolean' ? body.emailAllowed : undefined;
    let tenant = Object.keys(patch).length > 0 ? await this.tenants.updateShare(pathId(id), patch) : await this.tenants.findById(pathId(id));
    if (tenant && Object.keys(retention).length > 0) tenant = await this.tenants.updateRetention(tenant.id, retention);
    if (tenant && maxStoredBytes !== undefined) tenant = await this.tenants.setMaxStoredBytes(tenant.id, maxStoredBytes);
    if (tenant && disabled !== undefined && disabled !== tenant.disabled) {
      tenant = await this.tenants.setDisabled(tenant.id, disabled);
      if (tenant) await this.events.tenantChanged(tenant.id); // every replica reads its keys again: 403 within a second
    }
    if (!tenant) throw notFound('tenant');
    if (hosts !== undefined) await this.outbound.setAllowHosts(tenant.id, hosts);
    if (emailAllowed !== undefined) await this.outbound.setEmailAllowed(tenant.id, emailAllowed);
    return { ...this.view(tenant), ...(await this.outbound.settings(tenant.id)) };
  }

  @Post(':id/signing-secrets')
  @ApiJsonBodyErrors()
  @HttpCode(201)
  @ApiOperation({
    summary: "Rotate the tenant's signing secret: the new secret is shown once; the old one is still valid (and its signature still sent) for overlapSeconds",
  })
  @ApiBody({ type: CreateSigningSecretDto, required: false })
  @ApiResponse({ status: 201, type: CreatedSigningSecretDto })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  async rotateSigningSecret(@Param('id') id: string, @Body() body: unknown): Promise<CreatedSigningSecretDto> {
    const issues = new Issues();
    let overlapSeconds = DEFAULT_OVERLAP_SECONDS;
    if (body !== undefined && body !== null) {
      if (!isPlainObject(body)) {
        issues.add('body', 'type', 'body must be a JSON object');
      } else {
        rejectUnknown(body, ['overlapSeconds'], issues);
        if (body.overlapSeconds !== undefined) overlapSeconds = intInRange(body.overlapSeconds, 'overlapSeconds', 0, MAX_OVERLAP_SECONDS, issues) ?? 0;
      }
    }
    if (!issues.ok) throw invalid(issues.list);
    const made = await this.outbound.rotateSigningSecret(pathId(id), overlapSeconds * 1000);
    if (!made) throw notFound('tenant');
    return { ...secretView(made.view), secret: made.secret, previousExpiresAt: made.previousExpiresAt?.toISOString() ?? null };
  }

  @Get(':id/signing-secrets')
  @ApiOperation({ summary: "The tenant's signing secrets, newest first: ids and times, never the secrets" })
  @ApiResponse({ status: 200, type: SigningSecretListDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  async listSigningSecrets(@Param('id') id: string, @Query() query: Record<string, unknown>): Promise<SigningSecretListDto> {
    refuseQuery(query);
    const list = await this.outbound.listSigningSecrets(pathId(id));
    if (!list) throw notFound('tenant');
    return { items: list.map(secretView), nextCursor: null }; // a handful: one page
  }
}

function secretView(s: SigningSecretView): SigningSecretDto {
  return { id: s.id, createdAt: s.createdAt.toISOString(), expiresAt: s.expiresAt?.toISOString() ?? null };
}
