"""Grammar backends for the hf engine: turn a JSON schema into a per-row token mask.

Both backends write the same packed bitmask (int32 words, bit set = token allowed), so the
decode loop applies either with ``xgrammar.apply_token_bitmask_inplace``.

- ``xgrammar`` (default): one compiled grammar per row, so one batch mixes schemas. A schema is
  compiled as ``xgrammar_quirks.json_grammar``, the grammar the vllm engine sends too: strict (no
  extra keys), compact (no whitespace at all, the form vLLM produces with
  ``disable_any_whitespace``, so a model cannot burn its token budget on blanks), and with no raw
  control character inside a length-bounded string.
- ``outlines``: outlines' own engine (``outlines_core``: a regex index over the vocabulary). The
  regex is built with no whitespace. It keeps outlines' contract of one schema per batch, so the
  micro-batcher groups requests by schema. Its JSON-schema translation does not enforce
  integer ``minimum``/``maximum``, so bounded integers are checked only by validation afterwards
  (and a random model breaks them).
"""

from __future__ import annotations

import importlib.metadata
import json
import threading
from typing import Any, Protocol

from localbench.errors import UserError
from localbench.serving.output import OutputSpec
from localbench.serving.types import EngineError
from localbench.serving.xgrammar_quirks import json_grammar

GRAMMAR_BACKENDS = ("xgrammar", "outlines")


class GrammarError(UserError, ValueError):
    """A schema the grammar backend cannot compile: names the schema and the backend."""


class GrammarBackendUnavailable(EngineError):
    """The chosen grammar backend is not installed."""


class RowConstraint(Protocol):
    """The grammar state of one batch row."""

    def fill(self, bitmask: Any, row: int) -> bool:
        """Write the tokens allowed next into ``bitmask[row]``.

        Returns True when nothing but a stop token may follow: the reply is complete.
        """
        ...

    def accept(self, token_id: int) -> bool:
        """Advance by one sampled token; False if the grammar rejects it."""
        ...


class GrammarBackend(Protocol):
    name: str
    mixes_schemas: bool  # False: a batch holds one schema (the batcher groups by schema)

    def constraint(self, spec: OutputSpec) -> RowConstraint: ...

    def versions(self) -> dict[str, str]: ...


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


class _MaskRules:
    """What every constrained row's mask gets on top of its grammar: no id past the vocabulary (the
    logits' padding); and ``only_stop`` tells when nothing but a stop token may follow, so a finished reply ends without spending a forward pass
    on the forced EOS. (Raw control characters are the grammars' business: ``xgrammar_quirks``
    for xgrammar; outlines' strings exclude them already.)"""

    def __init__(self, decoded_vocab: list[bytes], vocab_size: int, stop_ids: list[int]):
        import torch

        words = (vocab_size + 31) // 32
        allowed = torch.zeros(words * 32, dtype=torch.bool)
        allowed[: min(len(decoded_vocab), vocab_size)] = True
        allowed[stop_ids] = True
        self.real_tokens = _pack(allowed)  # the vocabulary and stop ids, not the logits' padding
        non_stop = torch.zeros(words * 32, dtype=torch.bool)
        non_stop[:vocab_size] = True
        non_stop[stop_ids] = False
        self.non_stop = _pack(non_stop)

    def apply(self, bitmask: Any, row: int) -> None:
        bitmask[row] &= self.real_tokens

    def only_stop(self, bitmask: Any, row: int) -> bool:
        return not bool((bitmask[row] & self.non_stop).any())


def _pack(bits: Any) -> Any:
    """A bool vector (length a multiple of 32) as int32 words, bit i of word w = token 32*w + i."""
    import torch

    weights = torch.tensor([_bit(i) for i in range(32)], dtype=torch.int64)
    words = (bits.view(-1, 32).to(torch.int64) * weights).sum(dim=1)
    return words.to(torch.int32)


def _bit(i: int) -> int:
    """1 << i as a signed 32-bit value (bit 31 is negative)."""
    v = 1 << i
    return v - (1 << 32) if v >= 1 << 31 else v


class XGrammarBackend:
    """xgrammar: TokenizerInfo built once, compiled grammars cached by schema hash."""

    name = "xgrammar"
    mixes_schemas = True

    def __init__(self, tokenizer: Any, vocab_size: int, stop_ids: list[int]):
        try:
            import xgrammar as xgr
        except ImportError as e:
            raise GrammarBackendUnavailable("grammar backend 'xgrammar' is not installed: pip install xgrammar") from e
        self._xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stop_ids)
        self.tokenizer_info = info
        self._compiler = xgr.GrammarCompiler(info)
        self._compiled: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._rules = _MaskRules(info.decoded_vocab, vocab_size, stop_ids)

    def compiled(self, spec: OutputSpec) -> Any:
        key = spec.schema_hash
        with self._lock:
            grammar = self._compiled.get(key)
            if grammar is None:
                try:
                    grammar = self._compiler.compile_grammar(json_grammar(spec.schema))
                except Exception as e:  # noqa: BLE001 - xgrammar raises RuntimeError/ValueError variously
                    raise GrammarError(f"xgrammar cannot compile schema '{spec.name}' ({key}): {e}") from e
                self._compiled[key] = grammar
        return grammar

    def constraint(self, spec: OutputSpec) -> RowConstraint:
        return _XGrammarRow(self._xgr.GrammarMatcher(self.compiled(spec)), self._rules)

    def versions(self) -> dict[str, str]:
        return {"xgrammar": _version("xgrammar")}


class _XGrammarRow:
    def __init__(self, matcher: Any, rules: _MaskRules):
        self.matcher = matcher
        self.rules = rules

    def fill(self, bitmask: Any, row: int) -> bool:
        self.matcher.fill_next_token_bitmask(bitmask, row)
        self.rules.apply(bitmask, row)
        return self.matcher.is_terminated() or (self.matcher.is_completed() and self.rules.only_stop(bitmask, row))

    def accept(self, token_id: int) -> bool:
        return bool(self.matcher.accept_token(token_id))


class OutlinesBackend:
    """outlines' engine (outlines_core): one regex index per schema, one guide per row."""

    name = "outlines"
    mixes_schemas = False

    def __init__(self, tokenizer: Any, vocab_size: int, stop_ids: list[int]):
        try:
            import outlines_core
            from outlines_core.json_schema import build_regex_from_schema
        except ImportError as e:
            raise GrammarBackendUnavailable(
                "grammar backend 'outlines' is not installed: pip install outlines (or outlines_core)"
            ) from e
        import xgrammar as xgr

        self._oc = outlines_core
        self._build_regex = build_regex_from_schema
        # xgrammar already knows how to turn each token into its raw bytes (byte-level BPE,
        # sentencepiece byte fallback, ...); reuse that rather than writing a decoder again.
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stop_ids)
        special = set(info.special_token_ids) | set(getattr(tokenizer, "all_special_ids", []))
        special |= set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
        eos = stop_ids[0]
        table: dict[bytes, list[int]] = {}
        for token_id, raw in enumerate(info.decoded_vocab):
            if token_id in special or token_id == eos or not raw:
                continue
            table.setdefault(bytes(raw), []).append(token_id)
        self._vocabulary = outlines_core.Vocabulary(eos, table)
        self._indexes: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._rules = _MaskRules(info.decoded_vocab, vocab_size, [eos])

    def index(self, spec: OutputSpec) -> Any:
        key = spec.schema_hash
        with self._lock:
            idx = self._indexes.get(key)
            if idx is None:
                try:
                    regex = self._build_regex(json.dumps(spec.schema), whitespace_pattern="")
                    idx = self._oc.Index(regex, self._vocabulary)
                except Exception as e:  # noqa: BLE001 - outlines_core raises ValueError/RuntimeError
                    raise GrammarError(f"outlines cannot compile schema '{spec.name}' ({key}): {e}") from e
                self._indexes[key] = idx
        return idx

    def constraint(self, spec: OutputSpec) -> RowConstraint:
        return _OutlinesRow(self._oc.Guide(self.index(spec)), self._rules)

    def versions(self) -> dict[str, str]:
        return {"outlines_core": _version("outlines_core"), "outlines": _version("outlines")}


class _OutlinesRow:
    def __init__(self, guide: Any, rules: _MaskRules):
        self.guide = guide
        self.rules = rules

    def fill(self, bitmask: Any, row: int) -> bool:
        view = bitmask[row]
        self.guide.write_mask_into(view.data_ptr(), view.numel(), view.element_size())
        self.rules.apply(bitmask, row)
        return self.guide.is_finished() and self.rules.only_stop(bitmask, row)

    def accept(self, token_id: int) -> bool:
        try:
            self.guide.advance(token_id, return_tokens=False)
        except Exception:  # noqa: BLE001 - outlines_core raises on a token with no transition
            return False
        return True


def make_grammar_backend(name: str, tokenizer: Any, vocab_size: int, stop_ids: list[int]) -> GrammarBackend:
    """The named grammar backend, ready for this tokenizer and logits width."""
    if name == "xgrammar":
        return XGrammarBackend(tokenizer, vocab_size, stop_ids)
    if name == "outlines":
        return OutlinesBackend(tokenizer, vocab_size, stop_ids)
    raise ValueError(f"unknown grammar backend '{name}': choose one of {', '.join(GRAMMAR_BACKENDS)}")
