import type { BulkAction, BulkChange, BulkFilter } from '@almanac/domain';
import { BulkOperationsRepository, isJobIdString, type TenantRecord } from '@almanac/persistence';
import { Inject, Injectable } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import { API_SETTINGS, type ApiSettings } from '../api-settings';
import { conflict, notFound, overLimit } from '../http/api-error';
import { parseBulkCancel, parseBulkReschedule } from './bulk-input';
import { assertSameRequest, parseWithKey } from './operation-key';
import { operationView, type OperationView } from './operation-view';

/** A bulk request's answer: `created` false when its key named an operation already (200, not 202). */
export interface AcceptedOperation {
  created: boolean;
  operation: OperationView;
}

/**
 * Bulk operations: accepted here (one INSERT, answered 202), run by the promoter's bulk sweep,
 * read back by id. Tenant-scoped: another tenant's operation is a 404. A request with a `key`
 * is safe to resend: the same request again answers the operation it made (200), a different
 * one under the key is a 409.
 */
@Injectable()
export class OperationsService {
  @InjectPinoLogger('operations') private readonly log!: PinoLogger;

  constructor(
    private readonly repo: BulkOperationsRepository,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
  ) {}

  bulkCancel(tenant: TenantRecord, body: unknown): Promise<AcceptedOperation> {
    const { key, input } = parseWithKey(body, parseBulkCancel);
    return this.create(tenant, 'cancel', input.filter, null, key);
  }

  bulkReschedule(tenant: TenantRecord, body: unknown): Promise<AcceptedOperation> {
    const { key, input } = parseWithKey(body, parseBulkReschedule);
    return this.create(tenant, 'reschedule', input.filter, input.change, key);
  }

  async get(tenant: TenantRecord, id: string, over?: AbortSignal): Promise<OperationView> {
    const op = isJobIdString(id) ? await this.repo.findForTenant(tenant.id, id, over) : null;
    if (!op) throw notFound(`operation ${id}`);
    return operationView(op);
  }

  /**
   * Stops an operation: `cancelled` (200), as it is when it was already; the chunks applied
   * before it stay applied. A done or failed one is a 409.
   */
  async cancel(tenant: TenantRecord, id: string): Promise<OperationView> {
    if (!isJobIdString(id)) throw notFound(`operation ${id}`);
    const cancelled = await this.repo.cancel(tenant.id, id);
    if (cancelled) {
      this.log.info({ tenantId: tenant.id, operationId: id, changed: cancelled.changed }, 'bulk operation cancelled');
      return operationView(cancelled);
    }
    const op = await this.repo.findForTenant(tenant.id, id);
    if (!op) throw notFound(`operation ${id}`);
    if (op.state !== 'cancelled') throw conflict(`operation ${id} is ${op.state} and can no longer be cancelled`, 'state', 'not_cancellable');
    return operationView(op);
  }

  private async create(tenant: TenantRecord, action: BulkAction, filter: BulkFilter, change: BulkChange | null, key: string | null): Promise<AcceptedOperation> {
    const max = this.settings.maxOpenBulkOperations;
    const made = await this.repo.create(tenant.id, action, filter, change, max, key);
    if (!made) throw overLimit(429, `${max} bulk operations are already pending or running for this tenant (ALMANAC_BULK_MAX_OPEN)`, 'operations', 'too_many_open', 5000);
    if (!made.created) assertSameRequest(made.op, action, filter, change);
    else this.log.info({ tenantId: tenant.id, operationId: made.op.id, action, filter, key }, 'bulk operation accepted');
    return { created: made.created, operation: operationView(made.op) };
  }
}
