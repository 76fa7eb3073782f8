import { WorkerRuntimeModule } from '@almanac/worker-runtime';
import { Module } from '@nestjs/common';
import { allHandlers } from './handlers';
import { handlerSettingsFromEnv } from './handlers/handler-settings';

/**
 * Root of the worker role: the worker runtime with Almanac's built-in kinds. bootstrapRole adds
 * OpsModule (config, DataSource, Redis, logging, metrics, health, Clock, HotQueue), all global:
 * do not import it here.
 */
@Module({
  imports: [WorkerRuntimeModule.forRoot({ handlers: (env, { dataSource }) => allHandlers(handlerSettingsFromEnv(env, dataSource)) })],
})
export class WorkerModule {}
