"""The peers' names for formats parsegate registers under another name, so
that a vLLM user's `--tool-call-parser` / `--reasoning-parser` flags and a
llama.cpp user's chat format (its `COMMON_CHAT_FORMAT_*` in snake_case)
work unchanged in config.yaml (docs/peer-formats.md#the-peers-names).

Each row: the peer's name, the registered name it stands for, and where
the name comes from. vLLM's names are those of its registries,
`vllm/frontend/processing/tool_parsers/__init__.py` and
`vllm/frontend/processing/reasoning/__init__.py` (earlier
`vllm/tool_parsers/__init__.py`, `vllm/reasoning/__init__.py`); a name is
here only where vLLM's parser reads the format parsegate's target reads:
https://github.com/vllm-project/vllm. llama.cpp's are the
`common_chat_format` enum of `common/chat.h`, each format as its handler in
`common/chat.cpp` parses it: https://github.com/ggml-org/llama.cpp.
Names that differ from a registered one only by `-` / `_` need no row.
"""

from parsers.formats.table import alias
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

TOOL_CALL_NAMES = (
    ("deepseek_v3", "deepseekv3", "vLLM"),
    ("deepseek_v31", "deepseekv31", "vLLM"),
    ("deepseek_v32", "deepseekv32", "vLLM"),
    ("deepseek_v41", "deepseekv41", "vLLM"),  # vllm/tool_parsers/deepseekv41_engine_tool_parser.py
    ("cohere_command3", "command_r7b", "vLLM"),  # Command A / R7B: <|START_ACTION|>[…]<|END_ACTION|>
    ("llama4_json", "llama3", "vLLM"),  # vLLM's Llama3JsonToolParser under both names
    ("openai", "gpt-oss", "vLLM"),
    ("apertus", "apertus2509", "vLLM, llama.cpp"),
    ("hermes_2_pro", "hermes", "llama.cpp"),
    ("llama_3_x", "llama3", "llama.cpp"),
    ("mistral_nemo", "mistral", "llama.cpp"),
    ("magistral", "mistral", "llama.cpp"),
    ("deepseek_r1", "deepseekv3", "llama.cpp"),  # R1 calls tools as V3 does
    ("deepseek_v3_1", "deepseekv31", "llama.cpp"),
    ("functionary_v3_1_llama_3_1", "functionary_v3_1", "llama.cpp"),
    ("nemotron_v2", "nemotron_nano_v2", "llama.cpp"),
    ("lfm2_with_json_tools", "lfm2", "llama.cpp"),
    ("glm_4_5", "glm45", "llama.cpp"),
    ("qwen3_coder_xml", "qwen3_coder", "llama.cpp"),
    ("apriel_1_5", "apriel", "llama.cpp"),
)
REASONING_NAMES = (
    ("cohere_command3", "command_r7b", "vLLM"),  # the model opens <|START_THINKING|> itself
    ("openai_gptoss", "gpt-oss", "vLLM"),
    ("minimax_m2", "minimax", "vLLM"),  # no <think>: everything before </think> is reasoning
    ("nemotron_v3", "nemotron_3", "vLLM"),
    ("apertus", "apertus2509", "llama.cpp"),
    ("magistral", "mistral", "llama.cpp"),
    ("deepseek_v3_1", "deepseek-v3", "llama.cpp"),
    ("nemotron_v2", "nemotron_nano_v2", "llama.cpp"),
    ("glm_4_5", "glm45", "llama.cpp"),
    ("apriel_1_5", "apriel", "llama.cpp"),
)


def register_peer_names() -> None:
    """Register every row; the formats they name must be registered first."""
    for kind, rows in ((ToolFormat, TOOL_CALL_NAMES), (ReasoningFormat, REASONING_NAMES)):
        for name, target, _ in rows:
            alias(kind, target, name)
