import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { HttpMetricsMiddleware } from '../http/http-metrics';
import { SchedulesController } from './schedules.controller';
import { SchedulesService } from './schedules.service';

@Module({
  imports: [ApiCommonModule],
  controllers: [SchedulesController],
  providers: [SchedulesService, HttpMetricsMiddleware],
})
export class SchedulesModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HttpMetricsMiddleware).forRoutes(SchedulesController);
  }
}
