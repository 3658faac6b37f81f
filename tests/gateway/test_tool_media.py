"""Images and documents in tool results, as coding agents send them
(issue 44): Codex's `view_image` (a `function_call_output` of
`input_image` parts), Claude Code reading a PNG or a PDF (a `tool_result`
with `image` / `document` blocks). Never a 400 that ends the agent's run,
never a silent loss: a model configured to take images (`images: true`)
gets them in a user message after the tool results, any other model reads
in words what was there; a PDF's text reaches every model. Through the
official SDKs against the real gateway in front of the fake backend."""

from __future__ import annotations

import base64
import io

import anthropic
import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from tests.sdk_clients import anthropic_client

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
PNG_URL = f"data:image/png;base64,{PNG}"
TOOLS = [{"type": "function", "name": "view_image", "parameters": {"type": "object"}}]
CLAUDE_TOOLS = [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}]


def pdf_with_text(text: str) -> str:
    """A one-page PDF whose text layer says `text`, base64."""
    writer = PdfWriter()
    page = writer.add_blank_page(300, 200)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode())
    page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return base64.b64encode(out.getvalue()).decode()


@pytest.fixture(scope="module")
def messages_client(gateway_url: str) -> anthropic.Anthropic:
    return anthropic_client(gateway_url, api_key="client-key")


def view_image_turn(output: list[dict]) -> list[dict]:
    call = {"type": "function_call", "call_id": "call_1", "name": "view_image", "arguments": '{"path": "a.png"}'}
    return [
        {"role": "user", "content": "What is in a.png?"},
        call,
        {"type": "function_call_output", "call_id": "call_1", "output": output},
    ]


def claude_read_turn(content: list[dict]) -> list[dict]:
    return [
        {"role": "user", "content": "Read the file."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}]},
    ]


def image_parts(messages: list[dict]) -> list[tuple[str, str]]:
    """(role, url) of every image the backend received."""
    return [
        (message["role"], part["image_url"]["url"])
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_codex_view_image_reaches_a_model_that_takes_images_after_the_tool_message(client, fake, stream):
    output = [{"type": "input_image", "image_url": PNG_URL}]
    response = client.responses.create(model="qwen3-vl", input=view_image_turn(output), tools=TOOLS, stream=stream)
    if stream:
        assert [event.type for event in response][-1] == "response.completed"
    sent = fake.last_body["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2]["tool_call_id"] == "call_1" and "shown in the next user message" in sent[2]["content"]
    assert sent[3]["content"][0] == {"type": "text", "text": "The images of tool result call_1:"}
    assert image_parts(sent) == [("user", PNG_URL)]


def test_codex_view_image_on_a_model_without_images_is_described_in_the_tool_message(client, fake):
    client.responses.create(model="qwen3", input=view_image_turn([{"type": "input_image", "image_url": PNG_URL}]))
    sent = fake.last_body["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "tool"]
    size = len(base64.b64decode(PNG))
    assert (
        sent[2]["content"] == f"[image/png image, {size} bytes not shown: this model is not configured to take images]"
    )
    assert image_parts(sent) == []


def test_an_image_of_some_kilobytes_is_described_in_whole_kilobytes(client, fake):
    screenshot = base64.b64encode(bytes(3 * 1024 + 100)).decode()  # what the size is read from: the data
    output = [{"type": "input_image", "image_url": f"data:image/png;base64,{screenshot}"}]
    client.responses.create(model="qwen3-vl", input=view_image_turn(output), tools=TOOLS)
    assert fake.last_body["messages"][2]["content"] == "[image/png image, 3 KB: shown in the next user message]"


def test_the_images_of_parallel_results_go_first_into_the_user_message_that_follows(client, fake):
    calls = [{"type": "function_call", "call_id": f"call_{n}", "name": "view_image", "arguments": "{}"} for n in (1, 2)]
    outputs = [
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [{"type": "input_image", "image_url": PNG_URL}],
        },
        {"type": "function_call_output", "call_id": "call_2", "output": "no image here"},
    ]
    follow_up = {"role": "user", "content": "Compare them."}
    client.responses.create(model="qwen3-vl", input=[{"role": "user", "content": "Hi"}, *calls, *outputs, follow_up])
    sent = fake.last_body["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert sent[3]["content"] == "no image here"
    assert sent[4]["content"][1]["image_url"]["url"] == PNG_URL
    assert sent[4]["content"][-1] == {"type": "text", "text": "Compare them."}


def test_a_file_given_inline_is_read_as_text_in_a_user_message_and_a_tool_output(client, fake):
    pdf = {
        "type": "input_file",
        "filename": "report.pdf",
        "file_data": f"data:application/pdf;base64,{pdf_with_text('Revenue rose 4 percent')}",
    }
    text = {"type": "input_file", "filename": "notes.txt", "file_data": "data:text/plain,buy%20milk"}
    user = {"role": "user", "content": [{"type": "input_text", "text": "Read these."}, pdf, text]}
    client.responses.create(model="qwen3", input=[user])
    content = fake.last_body["messages"][-1]["content"]
    assert content.startswith("Read these.[document: report.pdf (application/pdf)]\nRevenue rose 4 percent")
    assert content.endswith("[document: notes.txt (text/plain)]\nbuy milk")
    client.responses.create(model="qwen3", input=view_image_turn([pdf]))
    assert "Revenue rose 4 percent" in fake.last_body["messages"][-1]["content"]


def test_claude_code_reading_a_pdf_gets_its_text_to_the_model(messages_client, fake):
    document = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": pdf_with_text("Page one says hello")},
    }
    content = [{"type": "text", "text": "PDF file read: spec.pdf"}, document]
    messages_client.messages.create(
        model="qwen3", max_tokens=64, messages=claude_read_turn(content), tools=CLAUDE_TOOLS
    )
    tool = fake.last_body["messages"][-1]
    assert tool["role"] == "tool" and tool["content"].startswith(
        "PDF file read: spec.pdf\n[document (application/pdf)]"
    )
    assert "Page one says hello" in tool["content"]


def test_claude_code_reading_a_png_is_never_silently_lost(messages_client, fake):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    for model, tool_text, images in [
        ("qwen3", "not shown: this model is not configured to take images", []),
        ("qwen3-vl", "shown in the next user message", [("user", PNG_URL)]),
    ]:
        messages_client.messages.create(
            model=model, max_tokens=64, messages=claude_read_turn([image]), tools=CLAUDE_TOOLS
        )
        sent = fake.last_body["messages"]
        tool = next(message for message in sent if message["role"] == "tool")
        assert tool_text in tool["content"]
        assert image_parts(sent) == images


def test_an_error_result_with_an_image_keeps_its_error_prefix(messages_client, fake):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    turn = claude_read_turn([{"type": "text", "text": "partial"}, image])
    turn[-1]["content"][0]["is_error"] = True
    messages_client.messages.create(model="qwen3", max_tokens=64, messages=turn, tools=CLAUDE_TOOLS)
    assert fake.last_body["messages"][-1]["content"].startswith("Error: partial\n[image/png image")


def test_a_document_the_gateway_would_have_to_fetch_is_a_400_naming_it(messages_client, fake):
    document = {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}
    with pytest.raises(anthropic.BadRequestError) as raised:
        messages_client.messages.create(model="qwen3", max_tokens=64, messages=claude_read_turn([document]))
    assert "messages[2].content[0].content[0].source must be a base64, text or content document source" in str(
        raised.value
    )
    assert fake.requests == []
