/**
 * `npm run demo`: the whole topology on 127.0.0.1 with ephemeral ports, a scripted conversation
 * that shows allow / modify / deny / stream / cancel / resubscribe, and a transcript.
 * Exits 0 when every scenario behaved as expected, 1 otherwise.
 *
 *   Cooking assistant (SDK client) -> cooking-assistant-guard (a2a-guard ROLE=client)
 *     -> cake-baker-guard (a2a-guard ROLE=server) -> Cake Baker (SDK server)
 *   both sidecars ask the reference guardian (AOS over HTTP, config/demo-policy.json)
 *
 * Options (environment): DEMO_LOG_LEVEL (silent) shows the sidecars' and the guardian's pino logs;
 * DEMO_INSPECT_RESPONSES=true turns on the sidecars' response hooks.
 */
import { runConversation, ASSISTANT_NAME } from './cooking-assistant';
import { startTopology, type TopologyOptions } from './topology';
import { type DemoResult, Transcript } from './transcript';
import { projectRoot } from './envfile';
import { relative } from 'node:path';

export type { DemoResult, ScenarioResult } from './transcript';

export interface DemoOptions {
  /** Print nothing (the transcript is still returned). */
  readonly quiet?: boolean;
  /** Where the transcript goes (default stdout). */
  readonly write?: (text: string) => void;
  readonly policyFile?: string;
  /** pino level of the sidecars and the guardian (default silent). */
  readonly logLevel?: string;
  /** Run the sidecars' response hooks too (INSPECT_RESPONSES=true). */
  readonly inspectResponses?: boolean;
}

export async function runDemo(opts: DemoOptions = {}): Promise<DemoResult> {
  const out = new Transcript(opts.quiet ?? false, opts.write);
  const topoOpts: TopologyOptions = {
    ...(opts.policyFile === undefined ? {} : { policyFile: opts.policyFile }),
    ...(opts.logLevel === undefined ? {} : { logLevel: opts.logLevel }),
    ...(opts.inspectResponses === true ? { sidecarEnv: { INSPECT_RESPONSES: 'true' } } : {}),
  };
  const topo = await startTopology(topoOpts);
  try {
    out.line('a2a-guard demo: every A2A call below is checked by the guardian on both sides');
    out.line();
    out.line(`  ${ASSISTANT_NAME} (SDK client)`);
    out.line(`    -> cooking-assistant-guard  ${topo.assistantGuard.url}  a2a-guard ROLE=client (the only URL the assistant knows)`);
    out.line(`    -> cake-baker-guard         ${topo.bakerGuard.url}  a2a-guard ROLE=server`);
    out.line(`    -> Cake Baker               ${topo.baker.origin}  SDK server`);
    out.line(`  guardian                      ${topo.guardian.url}  reference guardian, policy ${relative(projectRoot(), topo.guardian.policyFile)}`);
    const scenarios = await runConversation({
      sidecarUrl: topo.assistantGuard.url,
      impostorUrl: topo.bakerGuard.url,
      out,
      observer: {
        guardianCalls: topo.guardian.calls,
        bakerMessages: topo.baker.messages,
        bakerRequests: topo.baker.requests,
        bakerCancels: topo.baker.cancels,
      },
    });
    const ok = scenarios.every((s) => s.ok);
    out.line();
    out.line(
      `${ok ? 'DEMO OK' : 'DEMO FAILED'}: ${scenarios.filter((s) => s.ok).length}/${scenarios.length} scenarios behaved as expected` +
        (ok
          ? ''
          : ` (failed: ${scenarios
              .filter((s) => !s.ok)
              .map((s) => s.name)
              .join(', ')})`),
    );
    return { ok, mode: 'in-process', scenarios, transcript: out.lines };
  } finally {
    await topo.close();
  }
}

if (require.main === module) {
  const env = process.env;
  runDemo({
    ...(env['DEMO_LOG_LEVEL'] ? { logLevel: env['DEMO_LOG_LEVEL'] } : {}),
    inspectResponses: env['DEMO_INSPECT_RESPONSES'] === 'true',
  })
    .then((r) => {
      process.exitCode = r.ok ? 0 : 1;
    })
    .catch((err: unknown) => {
      process.stderr.write(`demo: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    })
    .finally(() => {
      // Everything was closed; a lingering keep-alive socket must not hold the exit.
      setTimeout(() => process.exit(), 2000).unref();
    });
}
