import type { BulkAction, BulkChange, BulkFilter } from '@almanac/domain';
import { BulkOperationsRepository, isJobIdString, type TenantRecord } from '@almanac/persistence';
import { Inject, Injectable } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import { API_SETTINGS, type ApiSettings } from '../api-settings';
import { notFound, overLimit } from '../http/api-error';
import { parseBulkCancel, parseBulkReschedule } from './bulk-input';
import { operationView, type OperationView } from './operation-view';

/**
 * Bulk operations: accepted here (one INSERT, answered 202), run by the promoter's bulk sweep,
 * read back by id. Tenant-scoped: another tenant's operation is a 404.
 */
@Injectable()
export class OperationsService {
  @InjectPinoLogger('operations') private readonly log!: PinoLogger;

  constructor(
    private readonly repo: BulkOperationsRepository,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
  ) {}

  bulkCancel(tenant: TenantRecord, body: unknown): Promise<OperationView> {
    const { filter } = parseBulkCancel(body);
    return this.create(tenant, 'cancel', filter, null);
  }

  bulkReschedule(tenant: TenantRecord, body: unknown): Promise<OperationView> {
    const { filter, change } = parseBulkReschedule(body);
    return this.create(tenant, 'reschedule', filter, change);
  }

  async get(tenant: TenantRecord, id: string): Promise<OperationView> {
    const op = isJobIdString(id) ? await this.repo.findForTenant(tenant.id, id) : null;
    if (!op) throw notFound(`operation ${id}`);
    return operationView(op);
  }

  private async create(tenant: TenantRecord, action: BulkAction, filter: BulkFilter, change: BulkChange | null): Promise<OperationView> {
    const max = this.settings.maxOpenBulkOperations;
    const op = await this.repo.create(tenant.id, action, filter, change, max);
    if (!op) throw overLimit(429, `${max} bulk operations are already pending or running for this tenant (ALMANAC_BULK_MAX_OPEN)`, 'operations', 'too_many_open', 5000);
    this.log.info({ tenantId: tenant.id, operationId: op.id, action, filter }, 'bulk operation accepted');
    return operationView(op);
  }
}
