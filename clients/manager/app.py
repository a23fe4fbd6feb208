"""The console's Starlette application: one route per page, rendered server-side."""

from __future__ import annotations

import contextlib
import logging
import secrets
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping

import jinja2
import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from clients.manager.action_runs import execute, prepare
from clients.manager.actions import ActionError, ActionRefused, parse_form, token_matches
from clients.manager.auth import BasicAuth
from clients.manager.charts import line_chart, show_number
from clients.manager.gather import ClusterReader
from clients.manager.history import LagHistory
from clients.manager.message_page import read_messages
from clients.manager.reach import PageReads, Part
from clients.manager.reassign_progress import read_progress
from clients.manager.sampler import sample_lag_forever, sample_throughput_forever
from clients.manager.throughput import ThroughputHistory, throughput_sections
from clients.manager.views import show_bytes, show_size, show_time
from clients.net import KafkaConnectionError
from clients.protocol import KafkaError

logger = logging.getLogger(__name__)
TEMPLATES = Path(__file__).with_name("templates")
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 500
BYTE_MODES = ("auto", "text", "hex")
MAX_CHARTED_TOPICS = 20
THROUGHPUT_CHART = (420, 150)


@dataclass(frozen=True)
class ManagerSettings:
    admin_config: Mapping[str, Any]
    refresh_s: int = 5
    users: Mapping[str, str] | None = None  # basic-auth users; None: no password
    lag_interval_s: float = 10.0
    # broker id -> its Prometheus metrics URL; empty: throughput from offsets
    metrics_endpoints: Mapping[int, str] = field(default_factory=dict)
    throughput_interval_s: float = 10.0
    page_timeout_s: float = 5.0  # every page answers within this, whatever the cluster does


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
    env.filters["show_size"] = show_size
    history = LagHistory()
    # One token per console process, in every form: a page of another site cannot read it,
    # so its forms cannot make the console act.
    csrf_token = secrets.token_urlsafe(32)
    env.globals["csrf_token"] = csrf_token
    env.globals["lag_chart"] = lambda group: line_chart("lag-chart", history.series(group))
    traffic = ThroughputHistory()
    env.globals["traffic_chart"] = lambda measure, kind, name: line_chart(
        f"{measure}-{kind}-{name}", traffic.series(measure, kind, name), *THROUGHPUT_CHART)
    env.globals["traffic_latest"] = traffic.latest
    env.filters["show_number"] = show_number
    templates = Jinja2Templates(env=env)
    state: dict[str, ClusterReader] = {}

    def render(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return templates.TemplateResponse(request, name, {"refresh_s": settings.refresh_s,
                                                          "problems": [], **context},
                                          status_code=status)

    def render_read(request: Request, name: str, reads: PageReads, **context: Any
                    ) -> Response:
        """A page of what ``reads`` gathered, its banner naming what could not be reached:
        503 when nothing could."""
        return render(request, name, 503 if reads.reached_nothing else 200,
                      problems=reads.problems, **context)

    def overview(template: str,
                 read: Callable[[ClusterReader, PageReads, Request], Awaitable[Any]],
                 refresh: bool = True) -> Callable[[Request], Awaitable[Response]]:
        """A page that shows what ``read`` gathers within the page's time and, unless it
        holds a form, reloads every refresh interval."""
        async def handler(request: Request) -> Response:
            reader = state["reader"]
            reads = reader.page_reads()
            page = await read(reader, reads, request)
            return render_read(request, template, reads, page=page, refresh=refresh)
        return handler

    async def group_actions(request: Request) -> Response:
        return render(request, "group_actions.html", group=request.path_params["name"])

    async def throughput(request: Request) -> Response:
        return render(request, "throughput.html", refresh=True, problems=traffic.problems,
                      sections=throughput_sections(traffic, MAX_CHARTED_TOPICS),
                      source=traffic.source, metrics=settings.metrics_endpoints,
                      interval_s=settings.throughput_interval_s)

    async def create_topic_form(request: Request) -> Response:
        return render(request, "create_topic.html")

    async def messages(request: Request) -> Response:
        mode = request.query_params.get("format", "auto")
        if mode not in BYTE_MODES:
            raise BadParameter(f"format must be one of {', '.join(BYTE_MODES)}")
        size = _int_param(request, "limit", DEFAULT_PAGE_SIZE) or DEFAULT_PAGE_SIZE
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise BadParameter(f"limit must be between 1 and {MAX_PAGE_SIZE}")
        reader = state["reader"]
        reads = reader.page_reads()
        page = await read_messages(
            reader, reads, request.path_params["name"],
            _int_param(request, "partition", 0) or 0, size, _int_param(request, "offset", None),
            _int_param(request, "timestamp", None))
        return render_read(request, "messages.html", reads, page=page, mode=mode, size=size,
                           modes=BYTE_MODES)

    async def action(request: Request) -> Response:
        try:
            form = parse_form(await request.body())
        except ActionError as exc:
            return render(request, "error.html", 400, message=str(exc))
        if not token_matches(form, csrf_token):
            return render(request, "error.html", 403, message="the form's CSRF token is "
                          "missing or wrong: reload the page and try again")
        reader = state["reader"]
        reads = reader.page_reads()
        try:
            planned = await reads.one(Part("what the action needs", answers=True), partial(
                prepare, reader, request.path_params["kind"], form))
        except ActionError as exc:
            return render(request, "error.html", 400, message=str(exc))
        if planned is None:
            return render(request, "error.html", 503,
                          message="the action cannot be planned: " + "; ".join(reads.problems))
        if form.get("confirm") != "yes":
            return render(request, "confirm.html", action=planned)
        try:
            done = await reads.one(Part("the result of the action", answers=True),
                                   partial(execute, reader, planned))
        except (KafkaError, ActionRefused) as exc:
            logger.warning("action %s refused: %s", planned.kind, exc)
            return render(request, "action_result.html", 400, action=planned, ok=False,
                          message=str(exc))
        if done is None:
            logger.warning("action %s not answered: %s", planned.kind, reads.problems)
            return render(request, "action_result.html", 503, action=planned, ok=False,
                          problems=reads.problems,
                          message="No answer: it may or may not have taken effect; look "
                                  "before trying again.")
        return render(request, "action_result.html", action=planned, ok=True, message=done)

    def error_page(status: int, prefix: str = ""
                   ) -> Callable[[Request, Exception], Awaitable[Response]]:
        async def handler(request: Request, exc: Exception) -> Response:
            return render(request, "error.html", status, message=prefix + str(exc))
        return handler

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["reader"] = ClusterReader(settings.admin_config, settings.page_timeout_s)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sample_lag_forever, state["reader"], history,
                                   settings.lag_interval_s)
                nursery.start_soon(sample_throughput_forever, state["reader"], traffic,
                                   settings.metrics_endpoints, settings.throughput_interval_s)
                yield
                nursery.cancel_scope.cancel()
        finally:
            await state["reader"].aclose()

    app = Starlette(routes=[
        Route("/", overview("cluster.html", lambda reader, reads, _: reader.cluster(reads))),
        Route("/topics", overview("topics.html",
                                  lambda reader, reads, _: reader.topics(reads))),
        Route("/topics/{name}", overview(
            "topic.html",
            lambda reader, reads, request: reader.topic(reads, request.path_params["name"]),
            refresh=False)),
        Route("/topics/{name}/messages", messages),
        Route("/topics/{name}/reassignment", overview(
            "reassignment.html", lambda reader, reads, request: read_progress(
                reader, reads, request.path_params["name"]))),
        Route("/actions/create-topic", create_topic_form, methods=["GET"]),
        Route("/actions/{kind}", action, methods=["POST"]),
        Route("/groups", overview("groups.html",
                                  lambda reader, reads, _: reader.groups(reads))),
        Route("/throughput", throughput),
        Route("/groups/{name}/actions", group_actions),
        Route("/groups/{name}", overview(
            "group.html",
            lambda reader, reads, request: reader.group(reads, request.path_params["name"]))),
    ], exception_handlers={
        KafkaError: error_page(502),
        KafkaConnectionError: error_page(503, "cluster unreachable: "),
        BadParameter: error_page(400),
    }, lifespan=lifespan)
    if settings.users is not None:
        return BasicAuth(app, settings.users)
    return app
