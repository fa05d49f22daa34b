/** THE A2A operation table lives in the toolkit (packages/toolkit/src/operations.ts): guardians and the proxy read the same one. */
export * from '@a2a-guard/toolkit/operations';
