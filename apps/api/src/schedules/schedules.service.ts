import { isDeepStrictEqual } from 'node:util';
import { nextOccurrences, type Schedule } from '@almanac/domain';
import { isJobIdString, SchedulesRepository, type ScheduleView, type TenantRecord } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { ApiError, conflict, invalid, notFound } from '../http/api-error';
import { Issues, queryInt, queryString, rejectUnknownQuery } from '../http/validation';
import { KindsService } from '../kinds/kinds.service';
import { StoredBytesQuota } from '../tenants/stored-bytes-quota';
import { decodeScheduleCursor, encodeScheduleCursor } from './schedule-cursor';
import { checkPatchedPayload, formatInZone, parseScheduleCreate, parseSchedulePatch, parseTiming, scheduleDiffers } from './schedule-input';

export const MAX_PREVIEW = 100;

/**
 * Recurring schedules. Materialising occurrences is the promoter's: this keeps `next_run_at`
 * (first occurrence after now) and `version` right, and removes not-yet-run occurrences when
 * the timing or the jobs' values change, the schedule is paused or deleted.
 */
@Injectable()
export class SchedulesService {
  @InjectPinoLogger('schedules') private readonly log!: PinoLogger;

  constructor(
    private readonly schedules: SchedulesRepository,
    private readonly kinds: KindsService,
    private readonly quota: StoredBytesQuota,
    private readonly clock: Clock,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
  ) {}

  async create(tenant: TenantRecord, body: unknown): Promise<{ created: boolean; schedule: ReturnType<typeof view> }> {
    const parsed = parseScheduleCreate(body, this.settings, await this.kinds.lookup([body]));
    if (!parsed.ok) throw invalid(parsed.issues);
    const input = parsed.value;
    const charge = await this.quota.chargeNewKeys(tenant, [input], (keys) => this.schedules.knownKeys(tenant.id, keys));
    const limit = tenant.maxSchedules ?? this.settings.maxSchedulesPerTenant;
    const result = await charge.settle(this.schedules.create({
      tenantId: tenant.id,
      key: input.key,
      kind: input.kind,
      cron: input.schedule.cron,
      timezone: input.schedule.timezone,
      payload: input.payload,
      maxAttempts: input.maxAttempts,
      missed: input.missed,
      timing: input.schedule,
      expectWithinSeconds: input.expectWithinSeconds,
    }, limit), (r) => ('created' in r && r.created ? [input.key] : []));
    if ('quota' in result) {
      const message = `this tenant has ${result.quota} schedules, its limit is ${limit}: delete some, or ask the operator to raise maxSchedules`;
      throw new ApiError(403, message, [{ field: 'schedules', rule: 'quota', message }]);
    }
    const { created, schedule } = result;
    if (!created) {
      const fields = scheduleDiffers(schedule, input);
      if (fields.length) {
        throw conflict(`key "${input.key}" already names a schedule with a different ${fields.join(', ')}`, 'key', 'conflict');
      }
    } else {
      this.log.info({ tenantId: tenant.id, scheduleId: schedule.id, kind: schedule.kind }, 'schedule created');
    }
    return { created, schedule: view(schedule) };
  }

  async get(tenant: TenantRecord, id: string, over?: AbortSignal) {
    return view(await this.find(tenant, id, over));
  }

  async list(tenant: TenantRecord, query: Record<string, unknown>, over?: AbortSignal) {
    const issues = new Issues();
    rejectUnknownQuery(query, ['limit', 'cursor'], issues);
    const limit = queryInt(query.limit, 'limit', 100, 1, 1000, issues);
    const cursor = queryString(query.cursor, 'cursor', issues);
    let afterKey: string | null = null;
    if (cursor !== undefined) {
      afterKey = decodeScheduleCursor(cursor);
      if (afterKey === null) issues.add('cursor', 'format', 'cursor is not one this API returned');
    }
    if (!issues.ok) throw invalid(issues.list);
    const rows = await this.schedules.list(tenant.id, afterKey, limit, over);
    const last = rows[rows.length - 1];
    return {
      items: rows.map(view),
      nextCursor: rows.length === limit && last ? encodeScheduleCursor(last.key) : null,
    };
  }

  async update(tenant: TenantRecord, id: string, body: unknown) {
    const kinds = await this.kinds.lookup([body]);
    const parsed = parseSchedulePatch(body, this.settings, kinds);
    if (!parsed.ok) throw invalid(parsed.issues);
    const patch = parsed.value;
    // A timing change is computed from the cron and timezone read here and applies only if they
    // are still current; a concurrent PATCH in between makes us read and compute again.
    for (let tries = 1; ; tries++) {
      const current = await this.find(tenant, id);
      if (patch.payload !== undefined || patch.kind !== undefined) {
        // The payload that will be stored, against the kind that will run it.
        const checked = checkPatchedPayload(patch.kind ?? current.kind, 'payload' in patch ? patch.payload : current.payload, kinds);
        if (!checked.ok) throw invalid(checked.issues);
      }
      let timing: { schedule: Schedule } | undefined;
      if (patch.cron !== undefined || patch.timezone !== undefined) {
        const t = parseTiming(patch.cron ?? current.cron, patch.timezone ?? current.timezone);
        if (!t.ok) throw invalid(t.issues);
        if (t.value.cron !== current.cron || t.value.timezone !== current.timezone) timing = { schedule: t.value };
      }
      // The new payload's whole size, not its growth: the one it replaces stays stored while
      // runs that retention keeps carry or point at it, and same-size PATCHes took a tenant
      // past its quota (review). null is never refused. Charged last, so nothing between charge
      // and write can leave it charged. The payload as stored changes nothing (a sync tool's resend).
      const charge = patch.payloadBytes && !isDeepStrictEqual(patch.payload, current.payload) ? this.quota.charge(tenant, patch.payloadBytes) : null;
      const write = this.schedules.update(tenant.id, id, {
        kind: patch.kind,
        payload: patch.payload,
        maxAttempts: patch.maxAttempts,
        missed: patch.missed,
        expectWithinSeconds: patch.expectWithinSeconds,
        ...(timing
          ? {
              cron: timing.schedule.cron,
              timezone: timing.schedule.timezone,
              timing: { schedule: timing.schedule, from: { cron: current.cron, timezone: current.timezone } }, // its next run by the database's clock
            }
          : {}),
      });
      // Given back unless the payload was written (not found, or changed meanwhile and read again).
      const res = await (charge ? charge.settle(write, (r) => (r && r !== 'changed' ? [''] : [])) : write);
      if (res === 'changed') {
        if (tries < 5) continue;
        throw conflict(`schedule ${id} is being changed concurrently; try again`, 'schedule', 'concurrent_update');
      }
      if (!res) throw notFound(`schedule ${id}`);
      if (timing) {
        this.log.info({ tenantId: tenant.id, scheduleId: id, removed: res.removed.count, version: res.schedule.version }, 'schedule timing changed');
      }
      return { ...view(res.schedule), removedOccurrences: res.removed.count };
    }
  }

  async remove(tenant: TenantRecord, id: string) {
    if (!isJobIdString(id)) throw notFound(`schedule ${id}`);
    const res = await this.schedules.delete(tenant.id, id);
    if (!res) throw notFound(`schedule ${id}`);
    this.log.info({ tenantId: tenant.id, scheduleId: id, removed: res.removed.count }, 'schedule deleted');
    return { ...view(res.schedule), removedOccurrences: res.removed.count };
  }

  async setPaused(tenant: TenantRecord, id: string, paused: boolean) {
    if (!isJobIdString(id)) throw notFound(`schedule ${id}`);
    const res = await this.schedules.setPaused(tenant.id, id, paused); // resumed by the database's clock
    if (!res) throw notFound(`schedule ${id}`);
    if (res.removed.count > 0) this.log.info({ tenantId: tenant.id, scheduleId: id, removed: res.removed.count }, 'schedule paused');
    return { ...view(res.schedule), removedOccurrences: res.removed.count };
  }

  async preview(tenant: TenantRecord, id: string, query: Record<string, unknown>, over?: AbortSignal) {
    const issues = new Issues();
    rejectUnknownQuery(query, ['count'], issues);
    const count = queryInt(query.count, 'count', 10, 1, MAX_PREVIEW, issues);
    if (!issues.ok) throw invalid(issues.list);
    const s = await this.find(tenant, id, over);
    const t = parseTiming(s.cron, s.timezone);
    if (!t.ok) throw invalid(t.issues);
    const at = nextOccurrences(t.value, this.clock.now(), count);
    return { timezone: s.timezone, items: at.map((d) => ({ at: d.toISOString(), local: formatInZone(d, s.timezone) })) };
  }

  /** A schedule's next `count` runs as its own zone shows them ([] if its timing no longer parses). */
  nextRunsLocal(s: Pick<ScheduleView, 'cron' | 'timezone'>, count: number): string[] {
    const t = parseTiming(s.cron, s.timezone);
    if (!t.ok) return [];
    return nextOccurrences(t.value, this.clock.now(), count).map((d) => formatInZone(d, s.timezone));
  }

  /** `over`: a read's request stopped waiting (onConnection); a change's read runs to its end. */
  private async find(tenant: TenantRecord, id: string, over?: AbortSignal): Promise<ScheduleView> {
    const s = isJobIdString(id) ? await this.schedules.findForTenant(tenant.id, id, over) : null;
    if (!s) throw notFound(`schedule ${id}`);
    return s;
  }
}

export function view(s: ScheduleView) {
  return {
    id: s.id,
    key: s.key,
    kind: s.kind,
    cron: s.cron,
    timezone: s.timezone,
    payload: s.payload ?? null,
    missed: s.missed,
    maxAttempts: s.maxAttempts,
    paused: s.paused,
    lastError: s.lastError,
    version: s.version,
    nextRunAt: s.nextRunAt ? s.nextRunAt.toISOString() : null,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
    expectWithinSeconds: s.expectWithinSeconds,
    lastOutcome: s.lastOutcome === null ? null : { outcome: s.lastOutcome, dueAt: s.lastOutcomeAt?.toISOString() ?? null },
  };
}
