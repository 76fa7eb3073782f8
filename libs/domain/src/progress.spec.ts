import { MAX_PROGRESS_NOTE, progressReport } from './progress';

describe('progressReport', () => {
  const at = new Date('2026-12-04T12:00:00Z');

  it('keeps percent, a note cut to its maximum, the attempt and the time', () => {
    expect(progressReport(42.5, 'rows 425 of 1000', 2, at)).toEqual({ percent: 42.5, note: 'rows 425 of 1000', attempt: 2, at: '2026-12-04T12:00:00.000Z' });
    expect(progressReport(0, undefined, 1, at).note).toBeNull();
    expect(progressReport(100, 'x'.repeat(500), 1, at).note).toHaveLength(MAX_PROGRESS_NOTE);
  });

  it('refuses a percent outside 0-100 or not a number, naming it', () => {
    for (const bad of [-1, 100.1, Number.NaN, Number.POSITIVE_INFINITY, '50' as unknown as number]) {
      expect(() => progressReport(bad, undefined, 1, at)).toThrow(/ctx.progress: percent must be a number from 0 to 100/);
    }
  });

  it('keeps a note jsonb can store: a cut never splits a pair, and U+0000 or a lone half becomes U+FFFD', () => {
    const emojiAtCut = `${'x'.repeat(MAX_PROGRESS_NOTE - 1)}😀`;
    expect(progressReport(1, emojiAtCut, 1, at).note).toBe('x'.repeat(MAX_PROGRESS_NOTE - 1));
    expect(progressReport(1, `${'x'.repeat(MAX_PROGRESS_NOTE - 2)}😀`, 1, at).note).toBe(`${'x'.repeat(MAX_PROGRESS_NOTE - 2)}😀`);
    expect(progressReport(1, 'a\u0000b \ud83d c \ude00', 1, at).note).toBe('a\ufffdb \ufffd c \ufffd');
  });
});
