"""Prefix caching for the `hf` backend: a radix tree of token spans and their key/value states.

Why: in multi-turn games most of a prompt was already run through the model. Turn n's prompt
extends turn n-1's prompt and reply; both debaters (and both seats of a flipped pair) read the same
rules and story; a judge's options share the whole prompt. Without reuse the prefill of those
tokens, which batching does not speed up on CPU, dominates the cost of a game. vLLM and SGLang
cache prefixes the same way (RadixAttention); this is the in-process equivalent.

Each node holds a span of token ids and, per layer, the keys/values of exactly those positions.
Sequences share the nodes of their common prefix, so a story read by four seats is stored once.
Keys carry rotary position embeddings for absolute positions 0..n-1, which is also where a cached
prefix sits in every later sequence, so states are reusable verbatim. Least recently used leaves
are evicted when the total size passes the budget. One tree per adapter; the whole cache is
dropped when the weights change (a training step, a loaded adapter).
"""

from __future__ import annotations

import inspect
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from sparring.models.hf_kv import cache_kwarg

log = logging.getLogger(__name__)

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values), each [heads, tokens, dim]


@dataclass(eq=False)
class _Node:
    tokens: tuple[int, ...]
    kv: KV
    parent: _Node | None
    children: dict[int, _Node] = field(default_factory=dict)
    used: int = 0

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + v.nbytes for k, v in self.kv)


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _slice(kv: KV, start: int, stop: int | None = None) -> KV:
    """Own copies (a view would keep a whole batch's tensor alive after eviction)."""
    return [(k[:, start:stop].clone(), v[:, start:stop].clone()) for k, v in kv]


class PrefixCache:
    """Longest-cached-prefix lookup and insertion of key/value states, bounded by `max_bytes`."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._roots: dict[str, _Node] = {}
        self._clock = itertools.count(1)
        self.nbytes = 0
        self.hits = 0  # prompt tokens not computed thanks to the cache (stats for benches and logs)
        self.misses = 0  # prompt tokens computed to fill it
        self.overflows = 0  # batches whose own prompts did not fit the budget (see PrefixContext.prepare)

    def clear(self) -> None:
        self._roots.clear()
        self.nbytes = 0

    def lookup(self, namespace: str, ids: Sequence[int], limit: int) -> tuple[int, list[KV]]:
        """(n, pieces) for the longest cached n <= limit: the states of ids[:n] as consecutive
        per-layer pieces [heads, tokens, dim] (views into the cache; copy them, do not modify)."""
        node = self._roots.get(namespace)
        pieces: list[KV] = []
        pos, now = 0, next(self._clock)
        while node is not None and pos < limit:
            child = node.children.get(ids[pos])
            if child is None:
                break
            m = min(_common(child.tokens, ids[pos:limit]), limit - pos)
            child.used = now
            pieces.append(child.kv if m == len(child.tokens) else [(k[:, :m], v[:, :m]) for k, v in child.kv])
            pos += m
            if m < len(child.tokens):
                break
            node = child
        return pos, pieces

    def insert(self, namespace: str, ids: Sequence[int], kv: KV) -> None:
        """Store the states of `ids` (per layer [heads, len(ids), dim]); shared prefixes are kept once."""
        if self.max_bytes <= 0 or not ids:
            return
        node = self._roots.setdefault(namespace, _Node((), [], None))
        pos, now = 0, next(self._clock)
        while pos < len(ids):
            child = node.children.get(ids[pos])
            if child is None:
                leaf = _Node(tuple(ids[pos:]), _slice(kv, pos), node, used=now)
                node.children[ids[pos]] = leaf
                self.nbytes += leaf.nbytes
                node = leaf
                break
            m = _common(child.tokens, ids[pos:])
            child.used = now
            if m < len(child.tokens):
                child = self._split(child, m)
            pos += m
            node = child
        self._evict(keep=node)

    def _split(self, node: _Node, m: int) -> _Node:
        """Cut `node` after m tokens; returns the new upper part (which keeps node's place)."""
        upper = _Node(node.tokens[:m], _slice(node.kv, 0, m), node.parent, used=node.used)
        lower_kv = _slice(node.kv, m)
        assert node.parent is not None
        node.parent.children[node.tokens[0]] = upper
        node.tokens, node.kv, node.parent = node.tokens[m:], lower_kv, upper
        upper.children[node.tokens[0]] = node
        return upper

    def _leaves(self) -> list[_Node]:
        out, stack = [], [c for r in self._roots.values() for c in r.children.values()]
        while stack:
            n = stack.pop()
            if n.children:
                stack.extend(n.children.values())
            else:
                out.append(n)
        return out

    def _evict(self, keep: _Node) -> None:
        if self.nbytes <= self.max_bytes:
            return
        protected = set()
        n: _Node | None = keep
        while n is not None:  # never evict the sequence just inserted
            protected.add(id(n))
            n = n.parent
        leaves = sorted((x for x in self._leaves() if id(x) not in protected), key=lambda x: x.used)
        while self.nbytes > self.max_bytes and leaves:
            leaf = leaves.pop(0)
            parent = leaf.parent
            assert parent is not None
            del parent.children[leaf.tokens[0]]
            self.nbytes -= leaf.nbytes
            if not parent.children and parent.parent is not None and id(parent) not in protected:
                # the parent became a leaf: it competes by its own last use
                i = next((j for j, x in enumerate(leaves) if x.used > parent.used), len(leaves))
                leaves.insert(i, parent)


MIN_HIT = 16  # a shorter cached prefix (a chat header) is not worth the copies; compute it instead


Pieces = list[KV]  # consecutive spans of cached states, see PrefixCache.lookup


@dataclass
class Packed:
    """Rows laid out as [cached prefix | new tokens], each part left-padded to a common width.

    Row i owns columns [P - cached[i], P) and [P + S - new[i], P + S). Positions count only real
    tokens, so every token gets the position it had when its states were cached. The cached
    columns are written straight into buffers with room for the new columns (and any decoding
    steps), which the cache from `cache()` adopts without another copy.
    """

    input_ids: torch.Tensor  # [B, P + S]
    attention_mask: torch.Tensor  # [B, P + S]
    buffers: list[tuple[torch.Tensor, torch.Tensor]] | None  # per layer [B, heads, P + S + room, dim]
    cached: list[int]
    new: list[int]
    width_past: int
    room: int

    @property
    def positions(self) -> torch.Tensor:
        return (self.attention_mask.cumsum(-1) - 1).clamp(min=0)

    def cache(self, kv_layers: int | None):
        """A cache holding the P cached columns, with room for the rest (None: let the model make
        its own, only possible when nothing is cached and the layout is not known)."""
        from sparring.models.hf_kv import PreallocatedCache

        if self.buffers is not None:
            return PreallocatedCache.adopt(self.buffers, self.width_past)
        if kv_layers is None:
            return None
        return PreallocatedCache(kv_layers, self.input_ids.shape[1] + self.room)

    def row_states(self, cache, i: int, length: int) -> KV:
        """The first `length` real tokens of row i (cached part, then computed part) per layer."""
        a, n = self.width_past - self.cached[i], self.cached[i]
        c = self.input_ids.shape[1] - self.new[i]
        out = []
        for layer in cache.layers:
            k, v = layer.keys[i], layer.values[i]
            if n:
                out.append((torch.cat([k[:, a : a + n], k[:, c : c + length - n]], dim=1),
                            torch.cat([v[:, a : a + n], v[:, c : c + length - n]], dim=1)))
            else:
                out.append((k[:, c : c + length], v[:, c : c + length]))
        return out


def pack(rows: Sequence[tuple[Sequence[int], int, Pieces]], pad_id: int, device, room: int = 0) -> Packed:
    """Lay out (ids, cached n, pieces of ids[:n]) rows for one batched forward or generate call;
    `room` extra columns are reserved in the buffers for decoding steps."""
    cached = [n for _, n, _ in rows]
    new = [len(ids) - n for ids, n, _ in rows]
    p, s = max(cached), max(new)
    ids_t = torch.full((len(rows), p + s), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), p + s), dtype=torch.long)
    for i, (ids, n, _) in enumerate(rows):
        if n:
            ids_t[i, p - n : p] = torch.tensor(ids[:n], dtype=torch.long)
            mask[i, p - n : p] = 1
        ids_t[i, p + s - new[i] :] = torch.tensor(ids[n:], dtype=torch.long)
        mask[i, p + s - new[i] :] = 1
    buffers = None
    if p:
        sample = next(pieces for _, n, pieces in rows if n)[0]
        buffers = []
        for layer, (k0, v0) in enumerate(sample):
            shape = (len(rows), k0.shape[0], p + s + room, k0.shape[2])
            k = k0.new_zeros(shape)
            v = v0.new_zeros((*shape[:3], v0.shape[2]))
            for i, (_, n, pieces) in enumerate(rows):
                at = p - n
                for piece in pieces:
                    pk, pv = piece[layer]
                    k[i, :, at : at + pk.shape[1]] = pk
                    v[i, :, at : at + pk.shape[1]] = pv
                    at += pk.shape[1]
            buffers.append((k, v))
    return Packed(ids_t.to(device), mask.to(device), buffers, cached, new, p, room)


def donors(contexts: Sequence[Sequence[int]], hits: Sequence[int], min_gain: int = 2 * MIN_HIT) -> list[int]:
    """Rows to compute before the rest of their batch: a later row shares at least `min_gain`
    more tokens with one of them than it finds in the cache (four seats reading one story)."""
    import numpy as np

    if len(contexts) < 2:
        return []
    lengths = np.array([len(c) for c in contexts])
    arr = np.full((len(contexts), int(lengths.max()) + 1), -1, dtype=np.int64)
    for i, c in enumerate(contexts):
        arr[i, : len(c)] = c
    chosen: set[int] = set()
    for i in range(1, len(contexts)):
        diff = arr[:i] != arr[i]
        first = np.where(diff.any(axis=1), diff.argmax(axis=1), arr.shape[1])  # identical: no difference
        lcp = np.minimum(np.minimum(first, lengths[:i]), lengths[i])
        j = int(lcp.argmax())
        if lcp[j] - hits[i] >= min_gain:
            chosen.add(j)
    return sorted(chosen)


class PrefixContext:
    """A cache plus the adapter namespace of the current call; the hf backend passes one per call."""

    def __init__(self, cache: PrefixCache, namespace: str, batch_size: int, kv_layers: int):
        self.cache, self.namespace, self.batch_size, self.kv_layers = cache, namespace, batch_size, kv_layers

    def lookup(self, ids: Sequence[int]) -> tuple[int, Pieces]:
        n, pieces = self.cache.lookup(self.namespace, ids, len(ids)) if len(ids) >= MIN_HIT else (0, [])
        return (n, pieces) if n >= MIN_HIT else (0, [])

    def prepare(self, model, contexts: Sequence[Sequence[int]], pad_id: int, device) -> list[tuple[int, Pieces]]:
        """Make each row's context cached, then return (cached n, states) per row.

        Contexts shared inside the batch are computed once (donors first); the rest is computed in
        tight groups (uncached rows left-padded together, partly cached rows together), so that the
        caller's own call runs only what follows the contexts: for generate, the last prompt token
        (the decode batch keeps every row); for scoring, the options.
        """
        found = [self.lookup(c) for c in contexts]
        computed = 0
        first = donors(contexts, [n for n, _ in found])
        if first:
            computed += self.fill(model, [contexts[j] for j in first], [found[j] for j in first], pad_id, device)
            found = [self.lookup(c) for c in contexts]
        rest = [i for i, (c, (n, _)) in enumerate(zip(contexts, found, strict=True)) if MIN_HIT <= len(c) > n]
        if rest:
            computed += self.fill(model, [contexts[i] for i in rest], [found[i] for i in rest], pad_id, device)
            found = [self.lookup(c) for c in contexts]  # less than all only if the budget is too small
            self._check_budget(contexts, found)
        self.cache.misses += computed
        self.cache.hits += max(0, sum(len(c) for c in contexts) - computed)
        return found

    def _check_budget(self, contexts: Sequence[Sequence[int]], found: list[tuple[int, Pieces]]) -> None:
        """Warn (once per cache) when a batch's own prompts were evicted while it was stored: then
        every turn of every live game recomputes its whole history (LRU evicts each game's states
        before its next turn), the cache costs copies and saves nothing."""
        lost = sum(len(c) >= MIN_HIT and n < len(c) for c, (n, _) in zip(contexts, found, strict=True))
        if not lost:
            return
        self.cache.overflows += 1
        if self.cache.overflows == 1:
            log.warning("prefix cache: %d of %d prompts in one batch did not fit its budget of %d MB, so their "
                        "states are recomputed on every turn; raise the model's `prefix_cache_mb` to hold the "
                        "histories of every game in flight", lost, len(contexts), self.cache.max_bytes // 2**20)

    def fill(self, model, contexts, found, pad_id: int, device) -> int:
        """Compute and store the states of `contexts`: uncached rows and partly cached rows in
        separate batches (mixing them would pad every uncached row by the longest cached prefix).
        Returns how many token positions were computed."""
        rows = [(c, n, pieces) for c, (n, pieces) in zip(contexts, found, strict=True) if n < len(c)]
        fresh = sorted((r for r in rows if not r[1]), key=lambda r: -len(r[0]))
        partial = sorted((r for r in rows if r[1]), key=lambda r: (-r[1], -len(r[0])))
        keep = keep_one(model)
        for group in (fresh, partial):
            for pos in range(0, len(group), self.batch_size):
                chunk = group[pos : pos + self.batch_size]
                packed = pack(chunk, pad_id, device)
                p = packed.width_past
                cache = packed.cache(self.kv_layers)
                model(input_ids=packed.input_ids[:, p:], attention_mask=packed.attention_mask,
                      position_ids=packed.positions[:, p:], use_cache=True, **{cache_kwarg(model): cache}, **keep)
                for i, (c, _, _) in enumerate(chunk):
                    self.cache.insert(self.namespace, c, packed.row_states(cache, i, len(c)))
        return sum(len(c) - n for c, n, _ in rows)


def keep_one(model) -> dict:
    """`logits_to_keep=1` where supported: a prefill does not need the vocabulary projection of
    every position (about a fifth of a small model's prefill compute)."""

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return {"logits_to_keep": 1} if supports_logits_to_keep(base) else {}


def supports_logits_to_keep(model) -> bool:
    """Whether `forward` can compute logits for the last positions only (saves a vocab-wide matmul)."""
    try:
        return "logits_to_keep" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
