import type { SettingsSection } from '../setting';
import { API_ROLE_SETTINGS } from './api';
import { CORE_SETTINGS } from './core';
import { PROMOTER_SETTINGS } from './promoter';
import { START_SETTINGS, TOOLING_SETTINGS } from './tools';
import { DISPATCH_AND_WORKER_SETTINGS } from './workers';

/**
 * Every environment variable Almanac and its tooling read, declared once, in the order and
 * sections of docs/configuration.md (whose tables are generated from them).
 */
export const SETTING_SECTIONS = [
  { id: 'core', settings: CORE_SETTINGS },
  { id: 'api', settings: API_ROLE_SETTINGS },
  { id: 'promoter', settings: PROMOTER_SETTINGS },
  { id: 'workers', settings: DISPATCH_AND_WORKER_SETTINGS },
  { id: 'start', settings: START_SETTINGS },
  { id: 'tooling', settings: TOOLING_SETTINGS },
] as const satisfies readonly SettingsSection[];

export const SETTINGS = {
  ...CORE_SETTINGS,
  ...API_ROLE_SETTINGS,
  ...PROMOTER_SETTINGS,
  ...DISPATCH_AND_WORKER_SETTINGS,
  ...START_SETTINGS,
  ...TOOLING_SETTINGS,
};

export type SettingName = keyof typeof SETTINGS;
