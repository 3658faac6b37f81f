"""parsegate's HTTP gateway: an OpenAI-compatible service in front of a
raw-text LLM server, parsing reasoning and tool calls with `parsers`.

Start it with `parsegate serve` (see `gateway.cli`), or build the app with
`gateway.app.create_app(config)`.
"""
