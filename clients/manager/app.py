"""The console's Starlette application: one route per page, rendered server-side."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping

import jinja2
import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from clients.manager.auth import BasicAuth
from clients.manager.charts import line_chart
from clients.manager.gather import ClusterReader
from clients.manager.history import LagHistory
from clients.manager.sampler import sample_lag_forever
from clients.manager.views import show_bytes, show_time
from clients.net import KafkaConnectionError
from clients.protocol import KafkaError

TEMPLATES = Path(__file__).with_name("templates")
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 500
BYTE_MODES = ("auto", "text", "hex")


@dataclass(frozen=True)
class ManagerSettings:
    admin_config: Mapping[str, Any]
    refresh_s: int = 5
    read_timeout_s: float = 5.0
    users: Mapping[str, str] | None = None  # basic-auth users; None: no password
    lag_interval_s: float = 10.0


def _int_param(request: Request, name: str, default: int | None) -> int | None:
    value = request.query_params.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise BadParameter(f"{name} must be an integer, not {value!r}") from None


class BadParameter(Exception):
    """A query parameter the page cannot use."""


def build_app(settings: ManagerSettings) -> Any:
    # Autoescape every template: record keys, values, headers and names are untrusted text.
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    env.filters["show_bytes"] = show_bytes
    env.filters["show_time"] = show_time
    history = LagHistory()
    env.globals["lag_chart"] = lambda group: line_chart("lag-chart", history.series(group))
    templates = Jinja2Templates(env=env)
    state: dict[str, ClusterReader] = {}

    def render(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return templates.TemplateResponse(request, name, {"refresh_s": settings.refresh_s,
                                                          **context}, status_code=status)

    def overview(template: str, read: Callable[[ClusterReader, Request], Awaitable[Any]]
                 ) -> Callable[[Request], Awaitable[Response]]:
        """A page that shows what ``read`` gathers and reloads every refresh interval."""
        async def handler(request: Request) -> Response:
            page = await read(state["reader"], request)
            return render(request, template, page=page, refresh=True)
        return handler

    async def messages(request: Request) -> Response:
        mode = request.query_params.get("format", "auto")
        if mode not in BYTE_MODES:
            raise BadParameter(f"format must be one of {', '.join(BYTE_MODES)}")
        size = _int_param(request, "limit", DEFAULT_PAGE_SIZE) or DEFAULT_PAGE_SIZE
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise BadParameter(f"limit must be between 1 and {MAX_PAGE_SIZE}")
        page = await state["reader"].messages(
            request.path_params["name"], _int_param(request, "partition", 0) or 0, size,
            _int_param(request, "offset", None), _int_param(request, "timestamp", None),
            settings.read_timeout_s)
        return render(request, "messages.html", page=page, mode=mode, size=size,
                      modes=BYTE_MODES)

    def error_page(status: int, prefix: str = ""
                   ) -> Callable[[Request, Exception], Awaitable[Response]]:
        async def handler(request: Request, exc: Exception) -> Response:
            return render(request, "error.html", status, message=prefix + str(exc))
        return handler

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["reader"] = ClusterReader(settings.admin_config)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sample_lag_forever, state["reader"], history,
                                   settings.lag_interval_s)
                yield
                nursery.cancel_scope.cancel()
        finally:
            await state["reader"].aclose()

    app = Starlette(routes=[
        Route("/", overview("cluster.html", lambda reader, _: reader.cluster())),
        Route("/topics", overview("topics.html", lambda reader, _: reader.topics())),
        Route("/topics/{name}", overview(
            "topic.html", lambda reader, request: reader.topic(request.path_params["name"]))),
        Route("/topics/{name}/messages", messages),
        Route("/groups", overview("groups.html", lambda reader, _: reader.groups())),
        Route("/groups/{name}", overview(
            "group.html", lambda reader, request: reader.group(request.path_params["name"]))),
    ], exception_handlers={
        KafkaError: error_page(502),
        KafkaConnectionError: error_page(503, "cluster unreachable: "),
        BadParameter: error_page(400),
    }, lifespan=lifespan)
    if settings.users is not None:
        return BasicAuth(app, settings.users)
    return app
