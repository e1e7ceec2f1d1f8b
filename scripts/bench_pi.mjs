// Driver of scripts/bench_loop.py for npm @mariozechner/pi-agent-core (Node): one JSON command a line on stdin,
// one JSON answer a line on stdout. Run from a folder where the package is installed (bench_peers.py does).
//   {"op": "calls", "n": N}        -> {"ms": total ms of one prompt making N tool calls, one per turn}
//   {"op": "memory", "k": K}       -> {"bytes": heap kept per message after K inputs, "messages": count}
//   {"op": "history", "m": M}      -> {"ms": one input with M messages already in the transcript}
import readline from "node:readline";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = path.join(process.cwd(), "node_modules", "@mariozechner");
const { Agent } = await import(pathToFileURL(path.join(modules, "pi-agent-core", "dist", "index.js")).href);
const { createAssistantMessageEventStream } = await import(pathToFileURL(path.join(modules, "pi-ai", "dist", "index.js")).href);

const MODEL = { id: "fake", name: "fake", api: "openai-completions", provider: "fake", baseUrl: "http://127.0.0.1:1",
  reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1e9, maxTokens: 1000 };
const USAGE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

function reply(content, stopReason) {
  return { role: "assistant", content, api: MODEL.api, provider: "fake", model: "fake", usage: USAGE, stopReason,
    timestamp: Date.now() };
}

// An instant fake stream function: N tool calls (one per turn), then a text answer.
function scripted(calls) {
  let made = 0;
  return () => {
    const stream = createAssistantMessageEventStream();
    const done = made++;
    const message = done >= calls
      ? reply([{ type: "text", text: "done" }], "stop")
      : reply([{ type: "toolCall", id: `c${done}`, name: "noop", arguments: { i: done } }], "toolUse");
    stream.push({ type: "done", reason: message.stopReason, message });
    stream.end(message);
    return stream;
  };
}

const NOOP = { name: "noop", label: "noop", description: "Does nothing.",
  parameters: { type: "object", properties: { i: { type: "integer" } } },
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: undefined }) };

function agent(streamFn, messages = []) {
  return new Agent({ initialState: { systemPrompt: "", model: MODEL, tools: [NOOP], messages },
    streamFn, toolExecution: "sequential" });
}

async function calls(n) {
  const a = agent(scripted(n));
  const start = performance.now();
  await a.prompt("go");
  return { ms: performance.now() - start };
}

function history(m) {
  const out = [];
  for (let i = 0; i < m; i += 2) {
    out.push({ role: "user", content: [{ type: "text", text: `question ${i}` }], timestamp: Date.now() });
    out.push(reply([{ type: "text", text: `answer ${i}` }], "stop"));
  }
  return out.slice(0, m);
}

async function historyInput(m) {
  const a = agent(scripted(0), history(m));
  const start = performance.now();
  await a.prompt("one more");
  return { ms: performance.now() - start };
}

async function memory(k) {
  let made = 0;
  const textModel = () => {
    const stream = createAssistantMessageEventStream();
    const message = reply([{ type: "text", text: `answer ${made++}` }], "stop");
    stream.push({ type: "done", reason: "stop", message });
    stream.end(message);
    return stream;
  };
  global.gc();
  const a = agent(textModel);
  await a.prompt("warm-up");
  global.gc();
  const before = process.memoryUsage().heapUsed;
  const count = a.state.messages.length;
  for (let i = 0; i < k; i++) await a.prompt(`question ${i}`);
  global.gc();
  const kept = process.memoryUsage().heapUsed - before;
  const messages = a.state.messages.length - count;
  return { bytes: kept / messages, messages };
}

const ops = { calls: (c) => calls(c.n), history: (c) => historyInput(c.m), memory: (c) => memory(c.k) };
const lines = readline.createInterface({ input: process.stdin });
process.stdout.write(JSON.stringify({ ready: true }) + "\n");
for await (const line of lines) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  try {
    process.stdout.write(JSON.stringify(await ops[command.op](command)) + "\n");
  } catch (error) {
    process.stdout.write(JSON.stringify({ error: String(error && error.stack || error) }) + "\n");
  }
}
