// openai-node's Responses API against the gateway, as Codex-style apps use
// it: responses.create (whole and streamed) and the responses.stream helper.
// Usage: node openai_responses.mjs BASE_URL MODEL; prints a JSON summary.
import OpenAI from "openai";
import { TOOLS, MESSAGES } from "./tools.mjs";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 20000 });
const tools = TOOLS.map(({ function: tool }) => ({ type: "function", strict: false, ...tool }));
const request = { model, input: MESSAGES[0].content, tools };

const summary = (response) => ({
  status: response.status,
  reasoning: response.output
    .filter((item) => item.type === "reasoning")
    .flatMap((item) => item.summary.map((part) => part.text))
    .join(""),
  tool_calls: response.output
    .filter((item) => item.type === "function_call")
    .map((item) => ({ id: item.call_id, name: item.name, arguments: JSON.parse(item.arguments) })),
});

const created = await client.responses.create(request);

const events = [];
let completed = null;
for await (const event of await client.responses.create({ ...request, stream: true })) {
  events.push(event.type);
  if (event.type === "response.completed") completed = event.response;
}

const helper = client.responses.stream(request);
const final = await helper.finalResponse();

console.log(
  JSON.stringify({
    create: summary(created),
    stream: { ...summary(completed), events },
    stream_helper: summary(final),
  }),
);
