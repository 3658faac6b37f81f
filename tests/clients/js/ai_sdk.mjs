// The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against the gateway:
// generateText and streamText with tools that the app runs itself.
// Usage: node ai_sdk.mjs BASE_URL MODEL; prints a JSON summary.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, jsonSchema, streamText, tool } from "ai";
import { TOOLS, MESSAGES } from "./tools.mjs";

const [baseURL, model] = process.argv.slice(2);
const provider = createOpenAICompatible({ name: "parsegate", baseURL, apiKey: "unused" });
const tools = Object.fromEntries(
  TOOLS.map(({ function: f }) => [f.name, tool({ description: f.description, inputSchema: jsonSchema(f.parameters) })]),
);
const request = { model: provider(model), messages: MESSAGES, tools, maxRetries: 0 };
const calls = (toolCalls) => toolCalls.map((call) => ({ id: call.toolCallId, name: call.toolName, input: call.input }));

const generated = await generateText(request);

const errors = [];
const streamed = streamText({ ...request, onError: ({ error }) => errors.push(String(error)) });
const streamedParts = [];
for await (const part of streamed.fullStream) {
  streamedParts.push(part.type);
  if (part.type === "error") errors.push(String(part.error));
}

console.log(
  JSON.stringify({
    generate: {
      reasoning: generated.reasoningText ?? null,
      text: generated.text,
      tool_calls: calls(generated.toolCalls),
      finish_reason: generated.finishReason,
    },
    stream: {
      reasoning: (await streamed.reasoningText) ?? null,
      text: await streamed.text,
      tool_calls: calls(await streamed.toolCalls),
      finish_reason: await streamed.finishReason,
      reasoning_streamed: streamedParts.includes("reasoning-delta"),
      tool_input_streamed: streamedParts.includes("tool-input-delta"),
      errors,
    },
  }),
);
