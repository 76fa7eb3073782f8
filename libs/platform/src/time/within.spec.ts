import { WaitTimeoutError, within } from './within';

describe('within', () => {
  it('answers with the work when it finishes in time', async () => {
    await expect(within(1000, Promise.resolve(7), 'x')).resolves.toBe(7);
  });

  it('rejects with a WaitTimeoutError naming the wait when the work hangs', async () => {
    jest.useFakeTimers();
    try {
      const hung = new Promise<never>(() => undefined);
      const waiting = within(5000, hung, 'roster leave');
      jest.advanceTimersByTime(5000);
      await expect(waiting).rejects.toThrow(new WaitTimeoutError('roster leave', 5000));
    } finally {
      jest.useRealTimers();
    }
  });
});
