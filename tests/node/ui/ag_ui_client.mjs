// A real AG-UI client (@ag-ui/client 1.0.0 HttpAgent) against the Flask example's POST /ag-ui.
// Usage: node ag_ui_client.mjs <base url>
// Runs: a thread asking for the weather and a file deletion (the deletion needs approval: the run ends
// with an interrupt), resumes it with an approval, then a second thread whose model fails.
// Prints one JSON object: what the client assembled (its messages, interrupts, events, errors).
import { HttpAgent } from "@ag-ui/client";

const base = process.argv[2];

function recorder() {
  const seen = { types: [], interrupts: null, outcomes: [], runErrors: [], custom: [] };
  const subscriber = {
    onEvent({ event }) { seen.types.push(event.type); },
    onRunFinishedEvent(params) {
      seen.outcomes.push(params.outcome);
      if (params.outcome === "interrupt") seen.interrupts = params.interrupts;
    },
    onRunErrorEvent({ event }) { seen.runErrors.push(event.message); },
    onCustomEvent({ event }) { seen.custom.push(event); },
  };
  return { seen, subscriber };
}

const out = {};

// 1. a run that calls a tool, then asks for approval of another
const agent = new HttpAgent({ url: `${base}/ag-ui`, threadId: `thread-${process.pid}-a` });
agent.addMessage({ id: "user-1", role: "user", content: "What is the weather in Paris? Then delete a.txt." });
const first = recorder();
await agent.runAgent({}, first.subscriber);
out.first = first.seen;
out.pendingAfterFirst = agent.pendingInterrupts.map((i) => i.id);

// 2. the person approves: the run resumes (RunAgentInput.resume)
const second = recorder();
await agent.runAgent({
  resume: agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })),
}, second.subscriber);
out.second = second.seen;
out.pendingAfterSecond = agent.pendingInterrupts.map((i) => i.id);
out.messages = agent.messages;

// 3. a thread whose model fails: RUN_ERROR
const failing = new HttpAgent({ url: `${base}/ag-ui`, threadId: `thread-${process.pid}-b` });
failing.addMessage({ id: "user-2", role: "user", content: "please fail" });
const third = recorder();
try {
  await failing.runAgent({}, third.subscriber);
  out.thrown = null;
} catch (error) {
  out.thrown = String(error && error.message);
}
out.failing = third.seen;

console.log(JSON.stringify(out));
