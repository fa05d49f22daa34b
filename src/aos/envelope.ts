/** The toolkit's module (packages/toolkit/src/envelope.ts), at the path the proxy and the package's `exports` have always used. */
export * from '@a2a-guard/toolkit/envelope';
