"""Collect concurrent ``complete()`` calls into batches for an in-process model, off the event loop.

Why: a model in this process answers a batch of prompts in about the time of one (the weights are
read once per step for every row), but callers ask one request at a time, concurrently (an
``eval run`` keeps ``--concurrency`` requests in flight). A :class:`BatchingBackend` queues the
requests; one collector task takes up to ``max_batch_size`` of them at a time and runs the batch in
a single worker thread, so the event loop (journals, judges, other endpoints) never waits on the
model. Requests that arrive while a batch runs form the next one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from agentworld.errors import one_line
from agentworld.models.base import ChatRequest, ChatResult, ModelLoadError


class BatchingBackend:
    """Base of the in-process backends: subclasses implement :meth:`run_batch` (blocking, in a thread).

    The model loads in the worker thread (:meth:`start_loading`, from the subclass's constructor), so
    the caller's own start-up overlaps with it; :meth:`ready` waits for it and turns any failure into
    one :class:`~agentworld.models.base.ModelLoadError`.

    Attributes:
        batch_sizes: the size of every batch run so far, in order (shows how well requests batched).
    """

    name: str
    install_hint: str = "bash install.sh --train"
    """How to install what the backend imports (named when the import fails)."""

    def __init__(self, *, max_batch_size: int = 16, batch_wait_s: float = 0.005) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_s
        self.batch_sizes: list[int] = []
        self._pending: list[tuple[ChatRequest, asyncio.Future[ChatResult], float]] = []
        self._collector: asyncio.Task[None] | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentworld-model")
        self._loading: Future[None] | None = None

    def start_loading(self, load: Callable[[], None]) -> None:
        """Run ``load`` in the worker thread (where every batch runs after it)."""
        self._loading = self._worker.submit(load)

    def ready(self) -> None:
        """Wait until the model has loaded.

        Raises:
            ModelLoadError: it cannot load; the text names the backend, the model and the reason.
        """
        if self._loading is None:
            return
        try:
            self._loading.result()
        except ModelLoadError:
            raise
        except ImportError as exc:
            raise ModelLoadError(f"{self.name}: {exc.name or exc} is not installed ({self.install_hint})") \
                from None
        except Exception as exc:  # a loader meeting a foreign file fails in its own ways
            raise ModelLoadError(f"{self.name}: cannot load the model: {type(exc).__name__}: "
                                 f"{one_line(str(exc))}") from None

    def run_batch(self, requests: list[ChatRequest]) -> list[ChatResult | BaseException]:
        """Answer ``requests`` in one batch, in order (called in the worker thread); a request that
        fails alone is answered with its exception."""
        raise NotImplementedError

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Queue ``request`` for the next batch and wait for its answer.

        ``meta`` holds ``batch_size`` (the batch it ran in) and ``elapsed_s`` (queueing included);
        ``latency_s`` is the batch's generation time.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ChatResult] = loop.create_future()
        self._pending.append((request, future, time.perf_counter()))
        if self._collector is None or self._collector.done() or self._collector.get_loop() is not loop:
            self._collector = loop.create_task(self._collect())
        return await future

    async def _collect(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            # let every caller that is about to enqueue (a gather, a semaphore just released) do so
            await asyncio.sleep(self.batch_wait_s)
            batch, self._pending = self._pending[:self.max_batch_size], self._pending[self.max_batch_size:]
            batch = [item for item in batch if not item[1].done()]  # cancelled callers
            if not batch:
                continue
            self.batch_sizes.append(len(batch))
            try:
                results = await loop.run_in_executor(self._worker, self.run_batch, [r for r, _, _ in batch])
            except Exception as exc:  # the batch's callers get the failure
                for _, future, _ in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            now = time.perf_counter()
            for (_, future, queued), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    meta = {**result.meta, "batch_size": len(batch), "elapsed_s": now - queued}
                    future.set_result(result.model_copy(update={"meta": meta}))

    async def aclose(self) -> None:
        """Stop the worker thread once the batch in flight (if any) is done (idempotent)."""
        await asyncio.get_running_loop().run_in_executor(None, self._worker.shutdown)
