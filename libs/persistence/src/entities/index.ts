import type { DataSourceOptions } from 'typeorm';

/** Entity classes, listed explicitly. Hot paths use SQL through repositories; entities type the rest. */
export const ENTITIES: NonNullable<DataSourceOptions['entities']> = [];
