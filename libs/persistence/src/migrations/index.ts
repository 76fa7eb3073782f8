import { CoreSchema1764400000000 } from './1764400000000-core-schema';

/** Every migration, in order. Listed explicitly (no globs) so any builder and Jest find them. */
export const MIGRATIONS = [CoreSchema1764400000000];
