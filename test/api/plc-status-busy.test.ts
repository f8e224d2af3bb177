import { describe, expect, it } from 'vitest';
import { cpuBusyBetween, hostCpuUtilizationMeter } from '../../api/plc-status-dispatcher.ts';

const cpu = (user: number, sys: number, idle: number) => ({ times: { user, nice: 0, sys, irq: 0, idle } });

describe("the status dispatcher's reading of the host's CPUs", () => {
  it('is the share of time not idle across every CPU since the previous reading', () => {
    // CPU 0: 300 busy of 400; CPU 1: 100 busy of 400: half of the host.
    expect(cpuBusyBetween([cpu(1000, 0, 5000), cpu(2000, 0, 5000)], [cpu(1200, 100, 5100), cpu(2050, 50, 5300)])).toBe(0.5);
    expect(cpuBusyBetween([cpu(0, 0, 0)], [cpu(0, 0, 100)])).toBe(0);
    expect(cpuBusyBetween([cpu(0, 0, 0)], [cpu(90, 10, 0)])).toBe(1);
    // No time passed, or a CPU that came online between the readings: nothing to say about it.
    expect(cpuBusyBetween([cpu(5, 5, 5)], [cpu(5, 5, 5)])).toBe(0);
    expect(cpuBusyBetween([cpu(0, 0, 0)], [cpu(10, 0, 10), cpu(100, 0, 0)])).toBe(0.5);
  });

  it('reads from the previous call on, each call a new window', () => {
    const readings = [[cpu(0, 0, 0)], [cpu(80, 0, 20)], [cpu(80, 0, 120)]];
    let at = 0;
    const meter = hostCpuUtilizationMeter(() => readings[at++] ?? []);
    expect(meter()).toBe(0.8);
    expect(meter()).toBe(0);
  });
});
