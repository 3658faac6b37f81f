// openai-node (`openai` on npm) against the gateway, as an app would use it:
// chat.completions.create (whole and streamed) and the chat.completions.stream
// helper. Usage: node openai_node.mjs BASE_URL MODEL; prints a JSON summary.
import OpenAI from "openai";
import { TOOLS, MESSAGES } from "./tools.mjs";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 20000 });
const request = { model, messages: MESSAGES, tools: TOOLS };

const summary = (choice) => ({
  reasoning: choice.message.reasoning_content ?? null,
  content: choice.message.content ?? null,
  tool_calls: (choice.message.tool_calls ?? []).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: JSON.parse(call.function.arguments),
  })),
  finish_reason: choice.finish_reason,
});

const created = await client.chat.completions.create(request);

let reasoning = "";
const calls = [];
let finishReason = null;
for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
  const choice = chunk.choices[0];
  if (!choice) continue;
  reasoning += choice.delta.reasoning_content ?? "";
  for (const call of choice.delta.tool_calls ?? []) {
    calls[call.index] ??= { id: call.id, name: call.function?.name, arguments: "" };
    calls[call.index].arguments += call.function?.arguments ?? "";
  }
  finishReason = choice.finish_reason ?? finishReason;
}

const helper = client.chat.completions.stream(request);
const final = await helper.finalChatCompletion();

console.log(
  JSON.stringify({
    create: summary(created.choices[0]),
    stream: {
      reasoning,
      tool_calls: calls.map((call) => ({ ...call, arguments: JSON.parse(call.arguments) })),
      finish_reason: finishReason,
    },
    stream_helper: summary(final.choices[0]),
  }),
);
