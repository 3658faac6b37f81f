"""Template mode: a model entry with `chat_template` is served through the
backend's `/v1/completions`, with the prompt rendered here from the model's
own Hugging Face chat template (`chat_template.py`), so that a server
without a chat template, or a base model, still serves chat requests.

The template comes from a file (`templates/sources.py`), or, with
`chat_template: backend`, from the server itself: llama.cpp's `GET /props`
(`chat_template`, `bos_token`, `eos_token`), asked on first use within the
backend's first-byte deadline, kept once it answered, and a failure kept
a few seconds (asked_once.py).
What is sent, and how the answer is read back, is `completion_request.py`.
A prompt that ends inside a reasoning block the template opened makes the
reasoning stage start in reasoning.
"""

from __future__ import annotations

import dataclasses

import orjson

from gateway.ops.config import CHAT_TEMPLATE_FROM_BACKEND, ConfigError, ModelConfig
from gateway.ops.errors import UPSTREAM_ERROR, ApiError
from gateway.ops.secrets import Secrets
from gateway.plan.parse_plan import ParsePlan
from gateway.templates.chat_messages import TEXT_PART_TYPES
from gateway.templates.chat_template import RENDER_ARGUMENTS, ChatTemplate, ChatTemplateError, prompt_opens_reasoning
from gateway.templates.derivation_process import compile_within
from gateway.templates.render_pool import RenderPool, render_memory_bytes
from gateway.templates.sources import load_chat_template
from gateway.upstream.asked_once import AskedOnce
from gateway.upstream.backend import GATEWAY_ONLY_FIELDS, Backend
from gateway.upstream.balancer import Route
from gateway.upstream.completion_request import ADDS_BOS_ITSELF, as_chat, completion_body
from gateway.upstream.errors import UpstreamErrors
from gateway.upstream.transport import TransportFailure, UpstreamResponse, within_deadline

PROPS_PATH = "/props"
_IMAGE_PARTS = ("image_url", "input_image", "image")
# /props failures said as they are
_PASSED_ON = ("upstream_unreachable", "upstream_timeout", "upstream_auth_failed", "upstream_too_large")


def model_template(model: ModelConfig, *, compile_now: bool = True) -> ChatTemplate | None:
    """The chat template a template-mode entry names (None: the server's,
    asked at first use); a file that is missing, unreadable or (compiled
    now) does not compile is a ConfigError naming the model and the file.
    The gateway loads it uncompiled (`compile_now=False`): it compiles a
    template only in a bounded worker (ChatTemplate.compile)."""
    if model.chat_template is None or model.chat_template == CHAT_TEMPLATE_FROM_BACKEND:
        return None
    try:
        return load_chat_template(
            model.chat_template, bos_token=model.bos_token, eos_token=model.eos_token, compile_now=compile_now
        )
    except ChatTemplateError as error:
        raise ConfigError(f"models[{model.name!r}].chat_template: {error}") from None


def check_templates(models: list[ModelConfig]) -> None:
    """Load every template file a config names and compile it in a worker
    process, within the model's render_timeout and its render workers'
    memory cap, so that start-up (or a reload) fails on a bad one."""
    for model in models:
        template = model_template(model, compile_now=False)
        if template is None:
            continue
        try:
            compile_within(template, model.render_timeout, render_memory_bytes(model.max_prompt_chars))
        except ChatTemplateError as error:
            raise ConfigError(f"models[{model.name!r}].chat_template: {error}") from None


def check_template_kwargs(chat: dict) -> None:
    """`chat_template_kwargs` naming a variable the request's own fields
    give the template is a 400 naming it (checked before any render)."""
    kwargs = chat.get("chat_template_kwargs")
    taken = next((name for name in RENDER_ARGUMENTS if name in kwargs), None) if isinstance(kwargs, dict) else None
    if taken is not None:
        message = f"chat_template_kwargs may not set {taken!r}: the template gets it from the request itself"
        raise ApiError(400, message, param="chat_template_kwargs", code="invalid_chat_template_kwargs")


class TemplateBackend(Backend):
    """A model's backend in template mode: chat requests rendered into
    prompts for `/v1/completions`, the answers read back as chat answers."""

    def __init__(self, model: ModelConfig, secrets: Secrets | None = None) -> None:
        super().__init__(model, secrets)
        self._file_template = model_template(model, compile_now=False)  # compiled by check_templates' worker
        self._server_template: AskedOnce[ChatTemplate] = AskedOnce()
        self._uncompilable: tuple[object, ApiError] | None = None  # the server's template that did not compile
        self._renderer = RenderPool(model.render_workers, model.render_timeout, model.max_prompt_chars)

    async def template(self, model: ModelConfig | None = None) -> ChatTemplate:
        """The file's template, else the server's (asked as `model`, the
        entry by default, says the server is): a request waits for it at
        most the first-byte deadline, then fails with a 504; a failure is
        answered again for a few seconds without asking (asked_once.py)."""
        if self._file_template is not None:
            return self._file_template
        model = model or self.config
        return await self._server_template.get(lambda: self._ask_template(model))

    async def prepare(self, payload: dict, plan: ParsePlan, model: ModelConfig) -> tuple[bytes, ParsePlan]:
        template = await self.template(model)
        chat = {key: value for key, value in payload.items() if key not in GATEWAY_ONLY_FIELDS}
        chat.update(plan.upstream)
        for key in [key for key, value in plan.upstream.items() if value is None]:
            del chat[key]  # a field the plan does not send (body())
        found = _part_not_text(chat["messages"])
        if found is not None:
            place, kind = found
            served = f"model {model.name!r} is served in template mode, whose prompt is text"
            if kind in _IMAGE_PARTS:
                raise ApiError(400, f"{served}: it takes no images", param="messages", code="images_not_supported")
            message = f"{served}: it takes no {kind!r} parts ({place})"
            raise ApiError(400, message, param="messages", code="content_not_supported")
        check_template_kwargs(chat)
        try:
            prompt = await self._renderer.render(template, chat, model.name)
        except ChatTemplateError as error:
            message = f"the chat template of model {model.name!r} refused the request: {error.problem}"
            raise ApiError(400, self.redact(message), param="messages", code="chat_template_error") from None
        if plan.reasoning_parser is not None and prompt_opens_reasoning(prompt):
            plan = dataclasses.replace(plan, starts_in_reasoning=True)
        server = model.backend.server_kind
        if server in ADDS_BOS_ITSELF and template.add_bos_token is not False:
            prompt = template.strip_bos(prompt)
        body = completion_body(chat, prompt, template.stop_texts(), server)
        body["model"] = model.upstream_model
        return orjson.dumps(body), plan

    async def close(self) -> None:
        await super().close()
        await self._renderer.close()

    async def open(
        self,
        body: bytes | None,
        path: str = "/completions",
        *,
        at_root: bool = False,
        errors: UpstreamErrors | None = None,
        route: Route | None = None,
    ) -> UpstreamResponse:
        return await super().open(body, path, at_root=at_root, errors=errors, route=route)

    def read_chunk(self, data: bytes, errors: UpstreamErrors) -> object:
        chunk = super().read_chunk(data, errors)
        return as_chat(chunk, "delta") if isinstance(chunk, dict) else chunk

    async def complete(self, body: bytes, errors: UpstreamErrors, route: Route | None = None) -> dict:
        return as_chat(await super().complete(body, errors, route), "message")

    async def _ask_template(self, model: ModelConfig) -> ChatTemplate:
        """The server's template within the first-byte deadline (a 504 past
        it), then compiled within the render bounds; a failure is kept a few
        seconds as every failure of it (asked_once.py)."""
        try:
            async with within_deadline(model.backend.first_byte_seconds, f"did not answer GET {PROPS_PATH}"):
                template = await self._props_template(model)
        except TransportFailure as failure:
            raise self.errors_for(model).transport_error(failure) from None
        await self._compile(template, model)
        return template

    async def _props_template(self, model: ModelConfig) -> ChatTemplate:
        """The template the server reports at `GET /props` (llama.cpp). A
        server that cannot be reached or answers late is said to be so; one
        that answers without a template is a 502 saying that."""
        problem = _no_template(model)
        try:
            props = await self.fetch(PROPS_PATH, at_root=True)
        except ApiError as error:
            code = error.body["error"]["code"]
            if code in _PASSED_ON:
                raise
            answered = (
                str(error)
                if code == "upstream_malformed"
                else f"it answered HTTP {error.backend_status or error.status}: {error}"
            )
            raise ApiError(502, f"{problem}: {answered}", type=UPSTREAM_ERROR, code="upstream_no_template") from None
        try:
            template = props_template(props, model, PROPS_PATH)
        except ChatTemplateError as error:
            raise ApiError(
                502, f"{problem}: {error.problem}", type=UPSTREAM_ERROR, code="upstream_no_template"
            ) from None
        if self._uncompilable is not None and self._uncompilable[0] == _answer(template):
            raise self._uncompilable[1]  # the template that did not compile, reported again
        if model.backend.server_kind in ADDS_BOS_ITSELF and template.bos_token:
            template.add_bos_token = await self._server_adds_bos(template.bos_token)
        return template

    async def _compile(self, template: ChatTemplate, model: ModelConfig) -> None:
        """Compile the server's template in a render worker, within the
        render bounds, not the first-byte deadline (compiling runs its
        constant expressions: ChatTemplate.compile). One that does not
        compile is a 502, and is not compiled again until the server reports
        another (`/props` is asked again after each failure's window,
        asked_once.py) or the config is reloaded (a new backend)."""
        try:
            await self._renderer.compile(template, model.name)
        except ChatTemplateError as error:
            message = f"{_no_template(model)}: {error.problem}"
            failure = ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_no_template")
            self._uncompilable = (_answer(template), failure)
            raise failure from None
        self._uncompilable = None

    async def _server_adds_bos(self, bos_token: str) -> bool | None:
        """Whether llama.cpp's server puts `bos_token` before a prompt, which
        `/props` does not say: the tokens it makes of an empty text with its
        special tokens (`POST /tokenize` with `add_special`, `with_pieces`;
        llama.cpp tools/server). None when it cannot tell."""
        asked = {"content": "", "add_special": True, "with_pieces": True}
        try:
            answer = await self.fetch("/tokenize", asked, at_root=True)
        except ApiError:
            return None
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(token, dict) for token in tokens):
            return None
        return any(token.get("piece") == bos_token for token in tokens)


def props_template(props: object, model: ModelConfig, where: str) -> ChatTemplate:
    """The template in a llama.cpp server's `GET /props` answer, with the
    model entry's own bos_token / eos_token winning, not compiled yet."""
    if not isinstance(props, dict) or not isinstance(props.get("chat_template"), str):
        raise ChatTemplateError(where, "the server reports no chat_template")
    return ChatTemplate(
        props["chat_template"],
        bos_token=model.bos_token or _text(props.get("bos_token")),
        eos_token=model.eos_token or _text(props.get("eos_token")),
        where=where,
        compile_now=False,  # compiled in a bounded worker: ChatTemplate.compile
    )


def _no_template(model: ModelConfig) -> str:
    return f"the backend for model {model.name!r} did not report its chat template at {PROPS_PATH}"


def _answer(template: ChatTemplate) -> object:
    """What the server reported, as far as compiling it goes: the sources."""
    return tuple(sorted(template.sources.items()))


def _part_not_text(messages: object) -> tuple[str, object] | None:
    """The place and type of the first content part that is not text (an
    image, audio, a file): a rendered prompt could only drop it."""
    for index, message in enumerate(messages if isinstance(messages, list) else ()):
        content = message.get("content") if isinstance(message, dict) else None
        for position, part in enumerate(content if isinstance(content, list) else ()):
            if isinstance(part, dict) and part.get("type") not in TEXT_PART_TYPES:
                return f"messages[{index}].content[{position}]", part.get("type")
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
