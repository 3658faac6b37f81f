"""Where the images in a tool's result go, for the model that serves the
turn (docs/api.md#images-and-documents-in-tool-results).

Agents return images from tools: Codex's `view_image` (a
`function_call_output` of `input_image` parts), Claude Code reading a PNG
(a `tool_result` with an `image` block). The surfaces keep them as
`image_url` parts of the chat `tool` message; a chat-completions tool
message carries text only (OpenAI's API; the servers' chat templates read
a tool message's text), so here:

- for a model that takes images (`images: true` in its config entry),
  each tool message keeps its text and says where its images went, and
  the images follow the turn's tool messages in a user message (the next
  user message, when one follows at once, gets them first), each group
  introduced by the call it answers;
- for a model that does not (the default, and always in template mode,
  where the prompt is text), the tool message says in words what was
  there, and nothing is sent that the backend would refuse.
"""

from __future__ import annotations

IMAGE = "image_url"


def with_tool_images(payload: dict, takes_images: bool) -> dict:
    """`payload` with no image part left in a tool message."""
    messages = payload.get("messages")
    if not isinstance(messages, list) or not any(_has_images(message) for message in messages):
        return payload
    placed: list[dict] = []
    waiting: list[dict] = []  # image parts for the user message after this run of tool messages
    for message in messages:
        if waiting and not _is_tool(message):
            if message.get("role") == "user":
                placed.append(_with_images_first(message, waiting))
                waiting = []
                continue
            placed.append(_user(waiting))
            waiting = []
        if _has_images(message):
            message, images = _split(message, takes_images)
            waiting += images
        placed.append(message)
    if waiting:
        placed.append(_user(waiting))
    return {**payload, "messages": placed}


def _is_tool(message: object) -> bool:
    return isinstance(message, dict) and message.get("role") == "tool"


def _has_images(message: object) -> bool:
    content = message.get("content") if isinstance(message, dict) and _is_tool(message) else None
    return isinstance(content, list) and any(isinstance(part, dict) and part.get("type") == IMAGE for part in content)


def _split(message: dict, takes_images: bool) -> tuple[dict, list[dict]]:
    """The tool message as text, and the parts that go to the user message."""
    texts: list[str] = []
    images: list[dict] = []
    for part in message["content"]:
        if part.get("type") == IMAGE:
            url = str((part.get(IMAGE) or {}).get("url", ""))
            if takes_images:
                images.append(part)
            texts.append(_described(url, takes_images))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    if images:
        call = message.get("tool_call_id", "")
        images = [{"type": "text", "text": f"The images of tool result {call}:"}, *images]
    return {**message, "content": "\n".join(texts)}, images


def _described(url: str, shown: bool) -> str:
    if url.startswith("data:"):
        media_type = url[5:].split(";", 1)[0].split(",", 1)[0] or "image"
        what = f"[{media_type} image, {_size(url)}"
    else:
        what = f"[image at {url}"
    if shown:
        return f"{what}: shown in the next user message]"
    return f"{what} not shown: this model is not configured to take images]"


def _size(url: str) -> str:
    """The size of a data URL's image: its bytes under 1 KB (an icon is
    not "0 KB", which reads as empty), else whole KB."""
    header, _, payload = url.partition(",")
    size = len(payload) * 3 // 4 - payload[-2:].count("=") if header.endswith(";base64") else len(payload)
    return f"{size} bytes" if size < 1024 else f"{size // 1024} KB"


def _user(images: list[dict]) -> dict:
    return {"role": "user", "content": images}


def _with_images_first(message: dict, images: list[dict]) -> dict:
    content = message.get("content")
    own = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    return {**message, "content": [*images, *own]}
