// The tools and the question the JavaScript clients send (tests/test_js_clients.py scripts the answer).
export const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
  {
    type: "function",
    function: {
      name: "get_time",
      description: "Current time in a time zone",
      parameters: { type: "object", properties: { zone: { type: "string" } }, required: ["zone"] },
    },
  },
];
export const MESSAGES = [{ role: "user", content: "Weather in Paris and Rome, and the time in Paris?" }];
