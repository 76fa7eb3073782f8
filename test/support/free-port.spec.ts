import { freePorts } from './free-port';

describe('freePorts', () => {
  it('hands out distinct ports (picked one by one, 500 ports repeated one about 99 % of the time)', async () => {
    const ports = await freePorts(500);
    expect(new Set(ports).size).toBe(500);
  });
});
