/**
 * Whether Postgres refused a value of the statement's input: SQLSTATE class 22 (data exception:
 * a NUL in text, an unsupported escape in JSON, a number out of range) or 23 (integrity
 * constraint). The same statement with the same values fails again however often it is sent.
 */
export function isValueError(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}
