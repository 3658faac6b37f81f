"""Background responses (docs/state.md#background-responses) through the
official openai SDK, against the real gateway in front of the scripted
raw-text backends (tests/fake_backend.py, and tests/scripted_backend.py
for one that never answers), on a real SQLite file, and on
`redis-server` and PostgreSQL: `background: true` answers the response
`queued` at once; the run goes on in the gateway, whatever the client
does; `retrieve` polls it to its end; `retrieve(stream=True,
starting_after=N)` resumes its events; `cancel` closes the backend request
and stores it `cancelled` with what was written; a bounded number run at
once; shutting down stores those still running as `failed`."""

from __future__ import annotations

import asyncio

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.store import open_store
from gateway.ops.store_config import StoreConfig
from tests.gateway import test_store_processes as processes
from tests.gateway.test_store_processes import EACH_STORE
from tests.scripted_backend import HANG
from tests.sdk_clients import openai_client

redis_server, postgres_server, store_url = processes.redis_server, processes.postgres_server, processes.store_url
TEXT = "Hello there, friend!"  # streamed by the backend 4 characters at a time
HELD_AFTER = 3  # the backend's events before it holds: the role, "Hell", "o th"


def config(fake_backend_server, store: dict) -> dict:
    _, backend_url = fake_backend_server
    return {"models": [{"name": "plain", "backend": {"url": f"{backend_url}/v1"}}], "store": store}


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server, tmp_path_factory) -> str:
    store = {"url": str(tmp_path_factory.mktemp("store") / "responses.db")}
    limited = {**config(fake_backend_server, store), "server": {"max_background_responses": 2}}
    return serve(create_app(Config.model_validate(limited)))


@pytest.fixture
def client(gateway) -> openai.OpenAI:
    return openai_client(gateway)


def held_backend(fake) -> None:
    """The backend writes "Hello th", then holds its stream until released."""
    fake.script(TEXT)
    fake.hold_after = HELD_AFTER


def read_until_held(events: openai.Stream) -> int:
    """Read a response's events until the last text the backend sent before
    holding; that event's sequence number."""
    for event in events:
        if event.type == "response.output_text.delta" and event.delta == "o th":
            return event.sequence_number
    raise AssertionError("the stream ended before the backend held it")


def test_a_background_response_is_queued_at_once_and_polled_to_its_end(client, fake):
    held_backend(fake)
    created = client.responses.create(model="plain", input="Hi", background=True)
    assert created.status == "queued" and created.background is True and created.output == []
    assert fake.held.wait(10)
    assert client.responses.retrieve(created.id).status == "in_progress"
    fake.release()
    events = list(client.responses.retrieve(created.id, stream=True))
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert [event.type for event in events[:3]] == ["response.queued", "response.created", "response.in_progress"]
    assert events[-1].type == "response.completed"
    done = client.responses.retrieve(created.id)
    assert done.status == "completed" and done.output_text == TEXT and done.background is True
    assert done.to_dict() == events[-1].response.to_dict()
    assert not fake.stream_abandoned.is_set()


def test_a_streamed_background_response_outlives_its_client_and_resumes_where_it_left(client, fake):
    held_backend(fake)
    stream = client.responses.create(model="plain", input="Hi", background=True, stream=True)
    first = next(iter(stream))
    assert first.type == "response.queued" and first.response.status == "queued"
    last_read = read_until_held(stream)
    stream.close()  # the client leaves
    fake.release()
    rest = list(client.responses.retrieve(first.response.id, stream=True, starting_after=last_read))
    assert rest[0].sequence_number == last_read + 1
    assert "".join(event.delta for event in rest if event.type == "response.output_text.delta") == "ere, friend!"
    assert rest[-1].type == "response.completed" and rest[-1].response.output_text == TEXT
    assert not fake.stream_abandoned.is_set()  # the backend's stream ran to its end
    assert client.responses.retrieve(first.response.id).status == "completed"


def test_cancel_closes_the_backend_request_and_stores_what_was_written(client, fake):
    held_backend(fake)
    created = client.responses.create(model="plain", input="Hi", background=True)
    last_read = read_until_held(client.responses.retrieve(created.id, stream=True))
    cancelled = client.responses.cancel(created.id)
    assert fake.stream_abandoned.wait(10)
    assert cancelled.status == "cancelled" and cancelled.id == created.id
    [message] = cancelled.output
    assert message.status == "incomplete" and message.content[0].text == "Hello th"
    assert client.responses.retrieve(created.id).to_dict() == cancelled.to_dict()
    assert client.responses.cancel(created.id).to_dict() == cancelled.to_dict()  # idempotent
    [end] = client.responses.retrieve(created.id, stream=True, starting_after=last_read)
    assert end.type == "response.incomplete" and end.response.status == "cancelled"


def test_a_backend_that_fails_leaves_a_failed_response(client, fake):
    fake.error = (503, b'{"error": {"message": "overloaded", "type": "server_error"}}')
    created = client.responses.create(model="plain", input="Hi", background=True)
    assert created.status == "queued"
    events = list(client.responses.retrieve(created.id, stream=True))
    assert events[-1].type == "response.failed"
    failed = client.responses.retrieve(created.id)
    assert failed.status == "failed" and failed.error is not None and failed.error.message


def test_background_without_store_and_cancel_of_a_foreground_response_are_400s(client, fake):
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="plain", input="Hi", background=True, store=False)
    assert refused.value.body["param"] == "background"
    assert fake.requests == []
    foreground = client.responses.create(model="plain", input="Hi")
    assert foreground.background is False
    with pytest.raises(openai.BadRequestError) as not_background:
        client.responses.cancel(foreground.id)
    assert "background" in not_background.value.body["message"]
    with pytest.raises(openai.BadRequestError) as no_events:
        client.responses.retrieve(foreground.id, stream=True)
    assert no_events.value.body["param"] == "stream"
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_unknown")
    with pytest.raises(openai.BadRequestError) as compaction:  # answered while the client waits
        client.responses.create(model="plain", input=[{"type": "compaction_trigger"}], background=True)
    assert compaction.value.body["param"] == "background"


def test_with_no_store_background_is_a_400(serve, fake_backend_server, fake):
    stateless = serve(create_app(Config.model_validate(config(fake_backend_server, {"backend": "none"}))))
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client(stateless).responses.create(model="plain", input="Hi", background=True)
    assert refused.value.body["param"] == "background" and "store.backend is none" in refused.value.body["message"]
    assert fake.requests == []


def test_past_max_background_responses_a_request_is_a_429(client, fake):
    held_backend(fake)
    running = [client.responses.create(model="plain", input="Hi", background=True) for _ in range(2)]
    with pytest.raises(openai.RateLimitError) as refused:
        client.responses.create(model="plain", input="Hi", background=True)
    assert "max_background_responses" in refused.value.body["message"]
    assert len(fake.requests) <= 2
    fake.hold_after = None
    fake.release()
    for response in running:
        assert list(client.responses.retrieve(response.id, stream=True))[-1].type == "response.completed"
    assert client.responses.create(model="plain", input="Hi", background=True).status == "queued"


async def _stored_status(url: str, response_id: str) -> dict:
    store = open_store(StoreConfig(url=url))
    assert store is not None
    try:
        found = await store.response("", response_id)
        assert found is not None
        return found.response
    finally:
        await store.close()


def test_shutting_down_stores_a_running_response_failed(gateway_process, fake_backend_server, fake, tmp_path):
    held_backend(fake)
    url = str(tmp_path / "store.db")
    process = gateway_process(config(fake_backend_server, {"url": url}))
    created = openai_client(process.url).responses.create(model="plain", input="Hi", background=True)
    assert fake.held.wait(10)
    process.stop()
    assert any("Application shutdown complete" in line for line in process.log)
    assert fake.stream_abandoned.wait(10)
    stored = asyncio.run(_stored_status(url, created.id))
    assert stored["status"] == "failed" and stored["error"]["code"] == "server_shutdown"


@EACH_STORE
def test_a_background_response_is_polled_and_cancelled_on_each_store(
    store_url, serve, fake_backend_server, fake, backend
):
    held_backend(fake)
    gateway = serve(
        create_app(Config.model_validate(config(fake_backend_server, {"backend": backend, "url": store_url})))
    )
    client = openai_client(gateway)
    created = client.responses.create(model="plain", input="Hi", background=True)
    read_until_held(client.responses.retrieve(created.id, stream=True))
    assert client.responses.retrieve(created.id).status == "in_progress"
    assert client.responses.cancel(created.id).status == "cancelled"
    assert fake.stream_abandoned.wait(10)
    assert client.responses.retrieve(created.id).output[0].content[0].text == "Hello th"
    fake.hold_after = None
    finished = client.responses.create(model="plain", input="Hi", background=True)
    assert list(client.responses.retrieve(finished.id, stream=True))[-1].type == "response.completed"
    assert client.responses.retrieve(finished.id).output_text == TEXT


def test_a_cancel_sent_to_another_gateway_sharing_the_store_stops_the_run(serve, fake_backend_server, fake, tmp_path):
    held_backend(fake)
    store = {"url": str(tmp_path / "store.db")}
    running, other = (
        openai_client(serve(create_app(Config.model_validate(config(fake_backend_server, store))))) for _ in range(2)
    )
    created = running.responses.create(model="plain", input="Hi", background=True)
    last_read = read_until_held(running.responses.retrieve(created.id, stream=True))
    assert other.responses.cancel(created.id).status == "cancelled"
    assert fake.stream_abandoned.wait(10)  # the run read the cancel, and closed its backend request
    [end] = running.responses.retrieve(created.id, stream=True, starting_after=last_read)
    assert end.response.status == "cancelled" and end.response.output[0].content[0].text == "Hello th"
    assert other.responses.retrieve(created.id).to_dict() == end.response.to_dict()


def test_a_run_holds_its_keys_slot_until_it_ends(serve, fake_backend_server, fake, tmp_path):
    held_backend(fake)
    keys = tmp_path / "keys"
    keys.write_text("sk-carol name=carol concurrent_streams=1\n")
    limited = {
        **config(fake_backend_server, {"url": str(tmp_path / "store.db")}),
        "server": {"api_keys_file": str(keys)},
    }
    client = openai_client(serve(create_app(Config.model_validate(limited))), api_key="sk-carol")
    created = client.responses.create(model="plain", input="Hi", background=True)
    with pytest.raises(openai.RateLimitError) as refused:  # the run is carol's request in flight
        client.responses.create(model="plain", input="Hi")
    assert "requests in flight" in refused.value.body["message"]
    fake.hold_after = None
    fake.release()
    assert list(client.responses.retrieve(created.id, stream=True))[-1].type == "response.completed"
    assert client.responses.create(model="plain", input="Hi").output_text == TEXT


def test_cancel_closes_a_backend_request_that_has_not_answered_yet(serve, side, tmp_path):
    side.routes["/v1/chat/completions"] = HANG  # the raw-text server takes the request and never answers
    model = {"name": "plain", "backend": {"url": f"{side.url}/v1"}}
    gateway = serve(create_app(Config.model_validate({"models": [model], "store": {"url": str(tmp_path / "s.db")}})))
    client = openai_client(gateway)
    created = client.responses.create(model="plain", input="Hi", background=True)
    assert side.held.acquire(timeout=10)
    cancelled = client.responses.cancel(created.id)
    assert side.left.acquire(timeout=10)  # the gateway closed the backend request
    assert cancelled.status == "cancelled" and cancelled.output == []
    [end] = list(client.responses.retrieve(created.id, stream=True))[-1:]
    assert end.type == "response.incomplete" and end.response.status == "cancelled"
