export * from './delivery-metrics';
export * from './handler';
export * from './handler-registry';
export * from './kind-routes';
export * from './ready-lists';
export * from './worker-roster';
export * from './kind-catalog';
export * from './payload-schema';
