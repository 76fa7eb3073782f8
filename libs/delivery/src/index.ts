export * from './delivery-metrics';
export * from './handler';
export * from './handler-registry';
export * from './kind-routes';
export * from './kind-catalog';
export * from './payload-schema';
export * from './ready/ready-queues';
