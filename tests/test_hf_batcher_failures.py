"""A batch that fails as a whole (CUDA out of memory, a lost device) fails its callers with an
EngineError: the simulation layer retries those on the next attempt instead of recording every
simulation of the batch as a permanent error."""

from __future__ import annotations

import asyncio

import pytest

from localbench.serving.hf.batcher import MicroBatcher
from localbench.serving.types import EngineError


class FakeOutOfMemoryError(RuntimeError):
    """Stands in for torch.cuda.OutOfMemoryError (a RuntimeError, not an EngineError)."""


async def test_a_runner_exception_reaches_every_caller_as_an_engine_error():
    def run(feed):
        feed.take(8)
        raise FakeOutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    b = MicroBatcher(run, max_batch_size=8, batch_wait_s=0.02, name="hf-engine")
    results = await asyncio.gather(*(b.submit(i) for i in range(5)), return_exceptions=True)
    assert len(results) == 5
    for err in results:
        assert isinstance(err, EngineError)
        assert "hf-engine" in str(err) and "FakeOutOfMemoryError" in str(err) and "out of memory" in str(err)
        assert isinstance(err.__cause__, FakeOutOfMemoryError)  # chained with `from`
    await b.aclose()


async def test_an_engine_error_of_the_runner_passes_unchanged():
    original = EngineError("the engine died")

    def run(feed):
        feed.take(1)
        raise original

    b = MicroBatcher(run, max_batch_size=2, batch_wait_s=0.0, name="hf-engine")
    with pytest.raises(EngineError) as e:
        await b.submit(1)
    assert e.value is original
    await b.aclose()


async def test_an_item_reported_with_its_own_error_keeps_it():
    """Only whole-batch failures become EngineErrors: a bad request's own error is its own."""
    def run(feed):
        for handle, x in feed.take(2):
            if x == 1:
                feed.report(handle, None, ValueError(f"bad schema {x}"))
            else:
                feed.report(handle, x)

    b = MicroBatcher(run, max_batch_size=2, batch_wait_s=0.02)
    bad, good = await asyncio.gather(b.submit(1), b.submit(2), return_exceptions=True)
    assert isinstance(bad, ValueError) and not isinstance(bad, EngineError) and good == 2
    await b.aclose()


async def test_a_failed_batch_is_an_engine_error_for_the_simulation_layer():
    """The simulation layer's check (`isinstance(..., EngineError)`) now holds."""
    from localbench.serving.client import StructuredClient
    from localbench.serving.types import GenerationRequest, ModelIdentity

    class BatchedBackend:
        engine = "hf"
        grammar_backend = "xgrammar"
        max_model_len = 4096
        identity = ModelIdentity("fake", "fake", "1")

        def __init__(self):
            def run(feed):
                feed.take(4)
                raise FakeOutOfMemoryError("CUDA out of memory")

            self._batcher = MicroBatcher(run, max_batch_size=4, batch_wait_s=0.02, name="hf-engine")

        async def complete(self, request):
            return await self._batcher.submit(request)

        async def aclose(self):
            await self._batcher.aclose()

    client = StructuredClient(BatchedBackend())
    reqs = [GenerationRequest(messages=[{"role": "user", "content": str(i)}], seed=i) for i in range(3)]
    outcomes = await asyncio.gather(*(client.generate(r) for r in reqs), return_exceptions=True)
    assert all(isinstance(o, EngineError) for o in outcomes)
    await client.aclose()
