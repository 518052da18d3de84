"""The ``hf`` engine: transformers on CPU or GPU, constrained by xgrammar (or outlines), micro-batched.

What runs on a laptop and in CI. Its parts:

- ``engine``: ``HFBackend``, the Backend itself (loads a preset, renders chat prompts, budgets them);
- ``batcher``: the micro-batcher that gathers concurrent requests into shared forward passes;
- ``decode``: the decode loop, one grammar, temperature and seed per batch row;
- ``grammar``: the grammar backends (xgrammar, one compiled grammar per row; outlines, one schema per batch);
- ``kv_buffer``: the running batch's KV cache, written in place;
- ``prefix_cache``: the KV of recent prompts, reused by prompts that start the same way;
- ``attention`` and ``linear``: the CPU attention and packed linear layers it installs in the model;
- ``torch_thread``: the one thread per process that loads weights and decodes.

Nothing is imported here: torch and transformers load only when a module of this package is
(``localbench.serving.engines.open_backend`` imports ``engine`` when the hf engine is chosen).
The xgrammar work-arounds the vllm engine shares stay in ``localbench.serving.xgrammar_quirks``.
"""
