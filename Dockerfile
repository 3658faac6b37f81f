# parsegate: the gateway alone, listening on the config's server.port (8080 in the
# shipped one). Config: the shipped demo
# config.yaml, replaced by a mount at /etc/parsegate/config.yaml or pointed
# elsewhere with PARSEGATE_CONFIG; ${VAR} references in it expand from the
# container's environment (backend keys, say). Python 3.11: the one
# requirements.lock is compiled for and CI runs, and the cheapest per
# streamed chunk of those measured (docs/benchmarks.md).
FROM python:3.11.14-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PARSEGATE_CONFIG=/etc/parsegate/config.yaml

WORKDIR /app
# The dependencies (runtime and the speed extra) at the versions and hashes
# of requirements.lock, generated from pyproject.toml by pip-compile (the
# command is at the top of the lock; tests/project/test_deployment.py checks the
# two agree), then the project itself, whose dependencies are all locked.
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY parsers ./parsers
COPY gateway ./gateway
RUN pip install --no-cache-dir --no-deps .

COPY config.yaml /etc/parsegate/config.yaml
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin parsegate \
    && mkdir /var/lib/parsegate && chown 10001 /var/lib/parsegate
# The working directory holds the default SQLite store, parsegate-store.db, of a
# config that sets no store.url (the shipped demo config keeps its store in memory; docs/state.md).
WORKDIR /var/lib/parsegate
USER 10001

# The port is the config's (server.port, or PARSEGATE_SERVER__PORT): no CMD names
# one, and the healthcheck calls the port the same config gives (`parsegate health`).
# The host is every interface, as a container's must be; PARSEGATE_SERVER__HOST changes it.
ENV PARSEGATE_SERVER__HOST=0.0.0.0
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
    CMD ["parsegate", "health"]
ENTRYPOINT ["parsegate", "serve"]
