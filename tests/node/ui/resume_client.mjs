// Real frontend clients whose stream is cut mid-answer, then get the rest (issue 33 point 6).
// Usage: node resume_client.mjs <direct base url> <cutting proxy base url>
// The first request of each goes through the proxy, which closes the connection after the first text delta
// (a network cut); the resumption goes to the server directly.
// - Vercel AI SDK (ai 7 AbstractChat + DefaultChatTransport): sendMessage is cut; chat.resumeStream() (GET
//   {api}/{chatId}/stream) replays the run; a second resumeStream() finds nothing (204).
// - AG-UI (@ag-ui/client 1.0.0 HttpAgent): runAgent is cut; a new HttpAgent with the messages the client kept
//   (as after a reload) runs again: the server replays the run of that user message instead of running it twice.
// Prints one JSON object.
import { AbstractChat, DefaultChatTransport } from "ai";
import { HttpAgent } from "@ag-ui/client";

const [direct, proxy] = process.argv.slice(2);

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

const texts = (messages) => messages.map((m) => ({
  role: m.role, text: (m.parts || []).filter((p) => p.type === "text").map((p) => p.text).join(""),
}));

const out = { unhandled: [] };
// @ag-ui/client 1.0.0 also rejects a promise nobody holds when its stream is cut ("Agent execution failed"):
// noted, as a browser would log it.
process.on("unhandledRejection", (error) => out.unhandled.push(String(error && error.message)));

// 1. Vercel AI SDK
{
  const errors = [];
  const chat = new Chat({
    id: `chat-${process.pid}`,
    transport: new DefaultChatTransport({
      api: `${proxy}/api/chat`,
      prepareReconnectToStreamRequest: ({ id }) => ({ api: `${direct}/api/chat/${encodeURIComponent(id)}/stream` }),
    }),
    onError: (error) => errors.push(String(error && error.message)),
  });
  await chat.sendMessage({ text: "Tell me the story." });
  out.vercelCut = { status: chat.status, messages: texts(chat.messages), errors: [...errors] };
  await chat.resumeStream();
  out.vercelResumed = { status: chat.status, messages: texts(chat.messages), ids: chat.messages.map((m) => m.id) };
  await chat.resumeStream();  // the run reached this client whole now: 204, nothing changes
  out.vercelAgain = { status: chat.status, messages: texts(chat.messages) };
}

// 2. AG-UI
{
  const threadId = `thread-${process.pid}`;
  const agent = new HttpAgent({ url: `${proxy}/ag-ui`, threadId });
  agent.addMessage({ id: "user-1", role: "user", content: "Tell me the story." });
  try {
    await agent.runAgent({});
    out.agUiCutError = null;
  } catch (error) {
    out.agUiCutError = String(error && error.message);
  }
  out.agUiCut = agent.messages.map((m) => ({ role: m.role, content: m.content }));
  const reloaded = new HttpAgent({ url: `${direct}/ag-ui`, threadId, initialMessages: agent.messages });
  const types = [];
  await reloaded.runAgent({}, { onEvent({ event }) { types.push(event.type); } });
  out.agUiResumed = { messages: reloaded.messages.map((m) => ({ role: m.role, content: m.content })), types };
}

console.log(JSON.stringify(out));
