// A real Vercel AI SDK client (ai 7: AbstractChat, the core of useChat, with DefaultChatTransport) against
// the Flask example's POST /api/chat.
// Usage: node vercel_ai_client.mjs <base url>
// Runs: a chat asking for the weather and a file deletion (the deletion needs approval), approved with
// addToolApprovalResponse (sent again by lastAssistantMessageIsCompleteWithApprovalResponses); a chat whose
// approval is rejected; a chat whose model fails. Prints one JSON object: the messages each chat assembled.
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";

const base = process.argv[2];

class MemoryState {
  constructor() { this.status = "ready"; this.error = undefined; this.messages = []; }
  pushMessage(message) { this.messages = this.messages.concat(message); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  }
  snapshot(value) { return structuredClone(value); }
}

class Chat extends AbstractChat {
  constructor(init) { super({ ...init, state: new MemoryState() }); }
}

function newChat(seen) {
  return new Chat({
    transport: new DefaultChatTransport({ api: `${base}/api/chat` }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (error) => seen.errors.push(String(error && error.message)),
    onFinish: ({ finishReason, isError }) => seen.finishes.push({ finishReason, isError }),
  });
}

async function settled(chat, done) {
  for (let i = 0; i < 400; i++) {  // 20 s at most
    if ((chat.status === "ready" || chat.status === "error") && done()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

const lastParts = (chat) => chat.messages[chat.messages.length - 1].parts;
const deletion = (chat) => lastParts(chat).find((part) => part.type === "tool-delete_file");

async function approvalChat(approved) {
  const seen = { errors: [], finishes: [] };
  const chat = newChat(seen);
  await chat.sendMessage({ text: "What is the weather in Paris? Then delete a.txt." });
  const before = structuredClone(chat.messages);
  const request = deletion(chat);
  await chat.addToolApprovalResponse({ id: request.approval.id, approved, reason: approved ? undefined : "keep it" });
  const finished = await settled(chat, () => ["output-available", "output-denied", "output-error"]
    .includes(deletion(chat).state) && seen.finishes.length >= 2);
  return { before, after: chat.messages, finished, status: chat.status, ...seen };
}

const out = {};
out.approved = await approvalChat(true);
out.rejected = await approvalChat(false);

const failing = { errors: [], finishes: [] };
const chat = newChat(failing);
await chat.sendMessage({ text: "please fail" });
await settled(chat, () => true);
out.failing = { ...failing, status: chat.status, error: chat.error ? chat.error.message : null, messages: chat.messages };

console.log(JSON.stringify(out));
