import { Baseline1796400000000 } from './1796400000000-baseline';

/** Every migration, in order. Listed explicitly (no globs) so any builder and Jest find them. */
export const MIGRATIONS = [Baseline1796400000000];
