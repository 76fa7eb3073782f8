export * from './env';
export * from './known-settings';
