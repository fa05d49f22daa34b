/**
 * Jest setup (jest.config.js setupFiles): the libraries the tests run as agents and clients log what
 * the tests provoke on purpose (a refused stream, an unknown task) on the console, with stacks. Their
 * own switches where they have one; otherwise only their known lines of that kind are dropped, so
 * anything else (and every test failure) still shows. TEST_LIBRARY_LOGS=1 shows them all.
 */
if (process.env.TEST_LIBRARY_LOGS === undefined) {
  // The AI SDK's own switch for its warnings (VoltAgent and a2a-ai-provider run on it).
  (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
  const expected: Record<'error' | 'warn' | 'debug' | 'info', readonly RegExp[]> = {
    // @a2a-js/sdk's express handler, on a stream the agent refuses (an unknown or finished task).
    // Its push sender, on a delivery the push relay refuses on purpose (denied, wrong task).
    error: [/^Pre-stream error for request /, /^Error during SSE streaming \(request /, /^Error sending push notification for task_id=/],
    warn: [/^AI SDK Warning/],
    // @ag-ui/a2a-middleware traces every message it sends and receives.
    debug: [/^sending message to a2a agent/, /^newMessage From a2a agent/],
    // @a2a-js/sdk's push sender, on every delivery.
    info: [/^Push notification sent for task_id=/],
  };
  // @a2a-js/sdk's JSON-RPC handler logs (with a stack) an A2A-Version it refuses, which the version tests send on purpose.
  const versionRefusal = (args: unknown[]): boolean =>
    args[0] === 'Unhandled error in JSON-RPC POST handler:' && (args[1] as { reason?: unknown } | undefined)?.reason === 'VERSION_NOT_SUPPORTED';
  for (const level of ['error', 'warn', 'debug', 'info'] as const) {
    const original = console[level].bind(console);
    console[level] = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && expected[level].some((re) => re.test(args[0] as string))) return;
      if (level === 'error' && versionRefusal(args)) return;
      original(...args);
    };
  }
}
