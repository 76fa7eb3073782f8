import { envelopeJobId, jobIdFromQueueJobId, queueJobId } from './queue-ids';

describe('hot queue job ids', () => {
  it('prefixes queue job ids because BullMQ refuses integer ids', () => {
    expect(queueJobId('42')).toBe('j-42');
    expect(jobIdFromQueueJobId('j-42')).toBe('42');
    expect(() => jobIdFromQueueJobId('42')).toThrow();
  });

  it('gives a worker\'s re-enqueue after attempt N its own queue id, parsed back to the row id', () => {
    expect(queueJobId('42', 3)).toBe('j-42-r3');
    expect(jobIdFromQueueJobId('j-42-r3')).toBe('42');
    for (const bad of ['j-42-r', 'j-42-a1', 'j-x', 'j-42-r3-r4']) expect(() => jobIdFromQueueJobId(bad)).toThrow();
  });

  it('names an envelope by its first and last row and its size, so the same batch gets the same id', () => {
    expect(envelopeJobId(['10', '11', '15'])).toBe('e-10-15-3');
    expect(() => jobIdFromQueueJobId('e-10-15-3')).toThrow();
  });
});
