"""Inkling's control tokens, read by its reasoning stage
(`parsers.stages.inkling`) and its call grammar (`parsers.grammars.inkling_call`)."""

MESSAGE_MODEL = "<|message_model|>"
THINKING, TEXT = "<|content_thinking|>", "<|content_text|>"
INVOKE_JSON, INVOKE_TEXT = "<|content_invoke_tool_json|>", "<|content_invoke_tool_text|>"
END_MESSAGE, END_SAMPLING = "<|end_message|>", "<|content_model_end_sampling|>"
ENDS = (END_MESSAGE, END_SAMPLING)
CONTROL_TOKENS = (
    MESSAGE_MODEL, THINKING, TEXT, INVOKE_JSON, INVOKE_TEXT, *ENDS,
    "<|endoftext|>", "<|message_user|>", "<|message_system|>", "<|message_tool|>", "<|content_image|>",
    "<|content_audio_input|>", "<|content_tool_error|>", "<|content_xml|>", "<|audio_end|>",
    "<|content_invoke_tool|>", "<|model_trigger_generation|>",
)  # fmt: skip
