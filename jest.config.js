/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }],
    // jose (used by @a2a-js/sdk) ships ESM only; Node 20's jest cannot require() it untransformed.
    '^.+/node_modules/jose/.+\\.js$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  // The toolkit workspace from its sources (as tsconfig.json's paths): no build of it needed to run a test.
  moduleNameMapper: {
    '^@a2a-guard/toolkit$': '<rootDir>/packages/toolkit/src/index.ts',
    '^@a2a-guard/toolkit/([a-z-]+)$': '<rootDir>/packages/toolkit/src/$1.ts',
  },
  testTimeout: 30000,
  // Libraries' console lines the tests provoke on purpose (test/helpers/quiet-libraries.ts).
  setupFiles: ['<rootDir>/test/helpers/quiet-libraries.ts'],
  // Integration tests start real servers; two workers suit the 2-core machines.
  maxWorkers: 2,
  // `npm run test:coverage`: the lines of src/ the suite runs, by V8's own counters (no instrumenting
  // transform). Proxies the tests start as child processes run dist/ and are not counted.
  coverageProvider: 'v8',
  collectCoverageFrom: ['src/**/*.ts'],
  coverageReporters: ['text-summary'],
  // Floors at the measured values, rounded down.
  coverageThreshold: { global: { statements: 96, branches: 91, functions: 95, lines: 96 } },
};
