export * from './executor';
export * from './handler-run';
export * from './heartbeat';
export * from './pool-taker';
export * from './worker-runtime.module';
export * from './worker-settings';
export * from './worker.service';
export * from './worker-identity';
