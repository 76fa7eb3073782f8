import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { Liveness } from './liveness';
import { PostgresPing } from './postgres-ping';
import { RedisHealthIndicator } from './redis.health';

/** What a role's readiness waits for (OpsModuleOptions.readyNeeds). */
export const READY_NEEDS = Symbol('READY_NEEDS');
export type ReadyNeed = 'postgres' | 'redis';

/**
 * Liveness says the process answers and none of its loops is wedged (Liveness); readiness says it
 * can do its work (READY_NEEDS: Postgres, and Redis except for the api, which still takes jobs
 * while Redis is away). A stalled dependency fails readiness only: restarting the process would
 * not bring Postgres back.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly postgres: PostgresPing,
    private readonly redis: RedisHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly liveness: Liveness,
    @Inject(READY_NEEDS) private readonly needs: readonly ReadyNeed[],
  ) {}

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([
      () => {
        const loops = this.indicators.check('loops');
        const wedged = this.liveness.wedged();
        return wedged.length === 0 ? loops.up() : loops.down({ wedged: wedged.map((w) => `${w.name} (no turn for ${Math.round(w.sinceMs / 1000)} s)`) });
      },
    ]);
  }

  @Get('ready')
  @HealthCheck()
  ready() {
    const checks = { postgres: () => this.postgres.check('postgres', 1000), redis: () => this.redis.pingCheck('redis', 1000) };
    return this.health.check(this.needs.map((need) => checks[need]));
  }
}
