import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Liveness } from './liveness';
import { RedisHealthIndicator } from './redis.health';

/**
 * Liveness says the process answers and none of its loops is wedged (Liveness); readiness says it
 * can do its work (Postgres and Redis). A stalled dependency fails readiness only: restarting
 * the process would not bring Postgres back.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly redis: RedisHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly liveness: Liveness,
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
    return this.health.check([
      () => this.db.pingCheck('postgres').withTimeout(1000),
      () => this.redis.pingCheck('redis', 1000),
    ]);
  }
}
