// Serves a2a-ai-provider calls (an ESM-only package) from its own process for the interop suite.
// Each stdin line is one call, {"cardUrl":"…","mode":"generate"|"stream","prompt":"…","contextId"?:"…"};
// each answer is a stdout line `ANSWER <json>`, in order: what the caller sees (text, finish reason,
// parts), or {error}. Other stdout lines are the libraries' own logging.
import readline from 'node:readline';

globalThis.AI_SDK_LOG_WARNINGS = false;
import { a2a } from 'a2a-ai-provider';
import { generateText, streamText } from 'ai';

async function call({ cardUrl, mode, prompt, contextId }) {
  const providerOptions = contextId === undefined ? undefined : { a2a: { contextId } };
  try {
    if (mode === 'stream') {
      const r = streamText({ model: a2a(cardUrl), prompt, providerOptions });
      const parts = [];
      for await (const p of r.fullStream)
        parts.push({
          type: p.type,
          ...(typeof p.text === 'string' ? { text: p.text } : {}),
          ...(p.finishReason !== undefined ? { finishReason: p.finishReason } : {}),
        });
      return { text: await r.text, finishReason: await r.finishReason, parts };
    }
    const r = await generateText({ model: a2a(cardUrl), prompt, providerOptions });
    return { text: r.text, finishReason: r.finishReason, content: r.content };
  } catch (e) {
    return { error: { name: e?.name, message: String(e?.message ?? e) } };
  }
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  process.stdout.write(`ANSWER ${JSON.stringify(await call(JSON.parse(line)))}\n`);
}
