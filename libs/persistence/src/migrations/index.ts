import { CoreSchema1764400000000 } from './1764400000000-core-schema';
import { Charges1764400005000 } from './1764400005000-charges';
import { DispatchBacklog1764400010000 } from './1764400010000-dispatch-backlog';
import { ColdTenantIndex1764400015000 } from './1764400015000-cold-tenant-index';
import { TenantScheduleQuota1764400020000 } from './1764400020000-tenant-schedule-quota';
import { SweepLeases1764400025000 } from './1764400025000-sweep-leases';
import { JobIdSequenceNoCache1764400030000 } from './1764400030000-job-id-sequence-no-cache';
import { JobKinds1764400035000 } from './1764400035000-job-kinds';
import { JobEffectsAndLedger1764400040000 } from './1764400040000-job-effects-and-ledger';
import { FairDelivery1764400045000 } from './1764400045000-fair-delivery';
import { TenantKeys1764400060000 } from './1764400060000-tenant-keys';
import { TenantOutbound1764400065000 } from './1764400065000-tenant-outbound';
import { BulkOperations1764400070000 } from './1764400070000-bulk-operations';
import { Retention1764400075000 } from './1764400075000-retention';
import { RetiredKeysGuard1764400076000 } from './1764400076000-retired-keys-guard';
import { RetiredKeysProbe1764400077000 } from './1764400077000-retired-keys-probe';
import { RetiredKeyRanges1764400080000 } from './1764400080000-retired-key-ranges';
import { DeliveryV31764400085000 } from './1764400085000-delivery-v3';
import { AbandonedEffects1764400090000 } from './1764400090000-abandoned-effects';
import { ScheduleExpectations1764400095000 } from './1764400095000-schedule-expectations';
import { TenantScopedRetiredKeys1764400100000 } from './1764400100000-tenant-scoped-retired-keys';
import { ScheduleSetAside1764400105000 } from './1764400105000-schedule-set-aside';
import { JobProgress1764400110000 } from './1764400110000-job-progress';
import { JobTraceParent1764400115000 } from './1764400115000-job-trace-parent';
import { RetiredKeyResultDigest1764400120000 } from './1764400120000-retired-key-result-digest';
import { SchedulePayloads1764400125000 } from './1764400125000-schedule-payloads';

/** Every migration, in order. Listed explicitly (no globs) so any builder and Jest find them. */
export const MIGRATIONS = [CoreSchema1764400000000, Charges1764400005000, DispatchBacklog1764400010000, ColdTenantIndex1764400015000, TenantScheduleQuota1764400020000, SweepLeases1764400025000, JobIdSequenceNoCache1764400030000, JobKinds1764400035000, JobEffectsAndLedger1764400040000, FairDelivery1764400045000, TenantKeys1764400060000, TenantOutbound1764400065000, BulkOperations1764400070000, Retention1764400075000, RetiredKeysGuard1764400076000, RetiredKeysProbe1764400077000, RetiredKeyRanges1764400080000, DeliveryV31764400085000, AbandonedEffects1764400090000, ScheduleExpectations1764400095000, TenantScopedRetiredKeys1764400100000, ScheduleSetAside1764400105000, JobProgress1764400110000, JobTraceParent1764400115000, RetiredKeyResultDigest1764400120000, SchedulePayloads1764400125000];
