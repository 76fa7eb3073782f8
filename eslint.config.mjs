// Type-aware lint. The domain library stays pure: no framework, driver or environment access.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.data/**', '**/*.js', '!scripts/**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/require-await': 'off',
      'no-restricted-syntax': ['error', { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' }],
    },
  },
  {
    files: ['**/*.spec.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
      'no-restricted-syntax': 'off',
    },
  },
  // scripts/ is checked CommonJS JavaScript (tsc -p scripts/tsconfig.json): plain `node` runs it
  // right after `npm ci` and in the image, with no build step. Undefined names are tsc's job
  // there, as for the TypeScript (typescript-eslint's advice for no-undef).
  {
    files: ['scripts/**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off', 'no-undef': 'off' },
  },
  {
    files: ['libs/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          group: ['@nestjs/*', 'typeorm', 'typeorm/*', 'bullmq', 'ioredis', 'pg', '@almanac/persistence', 'node:*', 'fs', 'child_process'],
          message: 'libs/domain is pure: no framework, database, queue or I/O imports.',
        }],
      }],
      'no-restricted-properties': ['error',
        { object: 'process', property: 'env', message: 'libs/domain never reads the environment; take config as an argument.' }],
      'no-restricted-globals': ['error', { name: 'process', message: 'libs/domain never touches the process.' }],
    },
  },
  // libs/config sits below every other library (persistence reads settings too): it may use the
  // domain's limits, never a library above it (a cycle) nor a framework.
  {
    files: ['libs/config/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          group: ['@nestjs/*', 'typeorm', 'bullmq', 'ioredis', 'pg', '@almanac/*', '!@almanac/domain'],
          message: 'libs/config sits below the other libraries: it imports @almanac/domain at most.',
        }],
      }],
    },
  },
  // Apps share code through libs/, never by importing another app's source; only the
  // all-in-one entry point composes them. (test/ and bench/ may drive several apps at once.)
  ...['api', 'promoter', 'dispatcher', 'worker'].map((app) => ({
    files: [`apps/${app}/**/*.ts`],
    ignores: ['apps/api/src/all-in-one.main.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          regex: `^(\\.\\./)+(apps/)?(?!${app}/)(api|promoter|dispatcher|worker)/`,
          message: `apps/${app} may not import another app's source: move what they share into libs/.`,
        }],
      }],
    },
  })),
  {
    files: ['libs/persistence/src/migrations/*.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
