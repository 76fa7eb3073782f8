export * from './env';
export * from './known-settings';
export * from './read-setting';
export * from './setting';
export * from './settings';
