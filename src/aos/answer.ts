/** The toolkit's module (packages/toolkit/src/answer.ts), at the path the proxy and the package's `exports` have always used. */
export * from '@a2a-guard/toolkit/answer';
