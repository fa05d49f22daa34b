/** The file descriptors split between the pools of connections: as configured when they fit, else the largest lowered first. */
import { DESCRIPTOR_RESERVE, descriptorBudget, descriptorsOf, softFileLimit, type DescriptorParts } from '../../../src/core/descriptor-budget';

const DEFAULTS: DescriptorParts = { inbound: 8192, guardianCall: 256, guardianStream: 256, push: 512 };

const limitsText = (soft: number): string =>
  `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}                 1048576              files\n`;

test('the soft limit is read from /proc/self/limits; unknown elsewhere', () => {
  expect(softFileLimit(limitsText(1024))).toBe(1024);
  expect(softFileLimit(undefined)).toBeUndefined();
  expect(softFileLimit('no such line')).toBeUndefined();
});

test('the defaults fit a normal limit as configured, and an unknown limit leaves them as configured', () => {
  for (const soft of [65_536, 1_048_576, 524_288]) expect(descriptorBudget(DEFAULTS, soft)).toEqual(DEFAULTS);
  expect(descriptorBudget(DEFAULTS, undefined)).toEqual(DEFAULTS);
});

test('every pool together stays within the soft limit less the reserve, inbound connections counted twice (one to the agent each)', () => {
  for (const soft of [256, 384, 512, 1024, 4096, 16_384]) {
    const b = descriptorBudget(DEFAULTS, soft);
    expect(descriptorsOf(b)).toBeLessThanOrEqual(soft - DESCRIPTOR_RESERVE);
    expect(2 * b.inbound + b.guardianCall + b.guardianStream + b.push).toBe(descriptorsOf(b));
  }
});

test('the largest is lowered first: the guardian keeps all it was given while MAX_CONNECTIONS comes down to it', () => {
  // 4096 - 64 = 4032: 1024 for the guardian and the push deliveries, (4032 - 1024) / 2 = 1504 inbound.
  expect(descriptorBudget(DEFAULTS, 4096)).toEqual({ inbound: 1504, guardianCall: 256, guardianStream: 256, push: 512 });
  // 16384 - 64 - 1024 = 15296, half of it inbound.
  expect(descriptorBudget(DEFAULTS, 16_384).inbound).toBe(7648);
  // Then the push deliveries' 512 with it, down to the guardian's 256: 2048 - 64 - 512 = 1472 = 3 x 490 (+2).
  expect(descriptorBudget(DEFAULTS, 2048)).toEqual({ inbound: 490, guardianCall: 256, guardianStream: 256, push: 490 });
});

test('past that every part is lowered to one level, none starved for another', () => {
  // 256 - 64 = 192 = 5 x 38 (+2): 38 inbound and 38 to the agent, 38 for each of the others.
  expect(descriptorBudget(DEFAULTS, 256)).toEqual({ inbound: 38, guardianCall: 38, guardianStream: 38, push: 38 });
  expect(descriptorBudget(DEFAULTS, 1024)).toEqual({ inbound: 192, guardianCall: 192, guardianStream: 192, push: 192 });
});

test('a part configured below the level keeps its value, and what it leaves goes to the others', () => {
  const small = { ...DEFAULTS, guardianStream: 10, push: 20 };
  // 192 - 30 = 162 for inbound (twice) and the guardian's calls: 54 each.
  expect(descriptorBudget(small, 256)).toEqual({ inbound: 54, guardianCall: 54, guardianStream: 10, push: 20 });
});

test('a pool not in use (0) takes nothing, and its share goes to the others', () => {
  const embedded = { inbound: 8192, guardianCall: 0, guardianStream: 0, push: 0 };
  expect(descriptorBudget(embedded, 512)).toEqual({ inbound: 224, guardianCall: 0, guardianStream: 0, push: 0 });
});

test('under a limit too low for all, each pool in use keeps its least (inbound 16, one for each other)', () => {
  expect(descriptorBudget(DEFAULTS, 80)).toEqual({ inbound: 16, guardianCall: 3, guardianStream: 3, push: 3 });
  expect(descriptorBudget(DEFAULTS, 10)).toEqual({ inbound: 16, guardianCall: 1, guardianStream: 1, push: 1 });
});
