// @anthropic-ai/sdk against the gateway's Messages surface, as an app would
// use it: messages.create (whole and streamed) and the messages.stream
// helper, with a tool and thinking on. Usage: node anthropic_sdk.mjs BASE_URL
// MODEL (BASE_URL without /v1: the SDK adds it); prints a JSON summary.
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, model] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 20000 });
const request = {
  model,
  max_tokens: 1024,
  thinking: { type: "enabled", budget_tokens: 512 },
  tools: [
    {
      name: "get_weather",
      description: "The weather in a city",
      input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  ],
  messages: [{ role: "user", content: "Weather in Paris and Rome?" }],
};

const summary = (message) => ({
  blocks: message.content.map((block) => {
    if (block.type === "thinking") return { type: "thinking", thinking: block.thinking, signed: !!block.signature };
    if (block.type === "tool_use") return { type: "tool_use", id: block.id, name: block.name, input: block.input };
    return { type: block.type, text: block.text };
  }),
  stop_reason: message.stop_reason,
  usage: { input_tokens: message.usage.input_tokens, output_tokens: message.usage.output_tokens },
});

const created = await client.messages.create(request);

// The raw events, accumulated by hand: what a client without the helper sees.
const events = [];
const blocks = [];
let stopReason = null;
for await (const event of await client.messages.create({ ...request, stream: true })) {
  events.push(event.type);
  if (event.type === "content_block_start") {
    blocks[event.index] = { ...event.content_block, partial_json: "" };
  } else if (event.type === "content_block_delta") {
    const block = blocks[event.index];
    const delta = event.delta;
    if (delta.type === "thinking_delta") block.thinking += delta.thinking;
    else if (delta.type === "signature_delta") block.signature = delta.signature;
    else if (delta.type === "text_delta") block.text += delta.text;
    else if (delta.type === "input_json_delta") block.partial_json += delta.partial_json;
  } else if (event.type === "message_delta") {
    stopReason = event.delta.stop_reason;
  }
}
const streamed = blocks.map((block) => {
  if (block.type !== "tool_use") return block;
  return { ...block, input: JSON.parse(block.partial_json) };
});

const helper = client.messages.stream(request);
let helperThinking = "";
helper.on("thinking", (delta) => {
  helperThinking += delta;
});
const final = await helper.finalMessage();

console.log(
  JSON.stringify({
    create: summary(created),
    stream: { ...summary({ content: streamed, stop_reason: stopReason, usage: {} }), events },
    stream_helper: { ...summary(final), thinking_streamed: helperThinking },
  }),
);
