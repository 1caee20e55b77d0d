"""A lean forward pass for a sentence-transformers BERT model (Transformer -> mean Pooling -> Normalize):
the query path of `minilm`, with the same weights and the same vectors (to ~1e-7; tested against the
module stack and against `encode`).

Why: a query is one short text, and the eager module stack of transformers spends a sizeable share of
each forward pass on Python and dispatch around tiny matrices. This pass is the arithmetic only:
embeddings + LayerNorm, then per layer a fused QKV projection, `scaled_dot_product_attention` with the
padding mask, output projection + residual + LayerNorm, GELU feed-forward + residual + LayerNorm; then
the masked mean and L2 normalization.

The pass is compiled with TorchScript, so it runs start to end in C++ without taking Python's GIL
between operations. In eager mode each of its operations gives the GIL back and must win it again;
in a server whose other threads run Python (HTTP, psycopg, fusion), each re-acquisition can wait up to
the interpreter's switch interval (5 ms by default), so a contended eager pass is many times slower
than a scripted one with the same vectors. The scripted module is then frozen and optimized for
inference (weights become constants and the linear layers run on prepacked oneDNN weights), vectors
within 2e-7 of the eager pass. Each layer's matrices are read whole for every pass, so a query's cost
is mostly reading the weights: a few texts in one pass cost far less than the same texts one by one.

`LeanBert.from_model(st)` returns None for anything it does not reproduce exactly (another
architecture or activation, relative position embeddings, other pooling); the caller then keeps the
module stack.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt


def _scripted_forward(
    word: Any,
    pos: Any,
    type0: Any,
    ln: tuple[Any, Any],
    layers: list[tuple[Any, ...]],
    heads: int,
    hidden: int,
    eps: float,
) -> Any:
    """The forward pass as a TorchScript module (built lazily: torch is imported only here)."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    class _Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word, self.pos, self.type0 = word.detach(), pos.detach(), type0.detach()
            self.ln_w, self.ln_b = ln[0].detach(), ln[1].detach()
            self.layers = [[t.detach() for t in layer] for layer in layers]  # TorchScript infers the type
            self.heads, self.hidden, self.eps = heads, hidden, eps

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            b, n = ids.shape[0], ids.shape[1]
            d, h, eps = self.hidden, self.heads, self.eps
            x = self.word[ids] + self.pos[:n] + self.type0
            x = F.layer_norm(x, [d], self.ln_w, self.ln_b, eps)
            keep = mask.to(torch.bool).unsqueeze(1).unsqueeze(1)  # attend to real tokens only
            for w in self.layers:  # qkv w/b, out w/b, ln1 w/b, ffn-in w/b, ffn-out w/b, ln2 w/b
                qkv = F.linear(x, w[0], w[1]).view(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
                att = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=keep)
                att = att.transpose(1, 2).reshape(b, n, d)
                x = F.layer_norm(F.linear(att, w[2], w[3]) + x, [d], w[4], w[5], eps)
                x = F.layer_norm(
                    F.linear(F.gelu(F.linear(x, w[6], w[7])), w[8], w[9]) + x, [d], w[10], w[11], eps
                )
            m = mask.unsqueeze(-1).to(x.dtype)
            pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return F.normalize(pooled, p=2.0, dim=1)

    eager = _Forward().eval()
    with warnings.catch_warnings():  # torch 2.13 marks TorchScript deprecated (it still works)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            scripted = torch.jit.script(eager)
        except Exception:  # a torch without TorchScript: the same pass, eager
            return eager
        try:  # weights as constants, linear layers on prepacked oneDNN weights
            return torch.jit.optimize_for_inference(torch.jit.freeze(scripted))
        except Exception:  # e.g. a torch build without oneDNN: the scripted pass as it is
            return scripted


class LeanBert:
    def __init__(self, st: Any, bert: Any) -> None:
        import torch

        cfg = bert.config
        self.st = st
        layers = []
        with torch.no_grad():
            for layer in bert.encoder.layer:
                a = layer.attention.self
                layers.append(
                    (
                        torch.cat([a.query.weight, a.key.weight, a.value.weight]).contiguous(),
                        torch.cat([a.query.bias, a.key.bias, a.value.bias]).contiguous(),
                        layer.attention.output.dense.weight,
                        layer.attention.output.dense.bias,
                        layer.attention.output.LayerNorm.weight,
                        layer.attention.output.LayerNorm.bias,
                        layer.intermediate.dense.weight,
                        layer.intermediate.dense.bias,
                        layer.output.dense.weight,
                        layer.output.dense.bias,
                        layer.output.LayerNorm.weight,
                        layer.output.LayerNorm.bias,
                    )
                )
        emb = bert.embeddings
        self.forward = _scripted_forward(
            emb.word_embeddings.weight,
            emb.position_embeddings.weight,
            emb.token_type_embeddings.weight[0],
            (emb.LayerNorm.weight, emb.LayerNorm.bias),
            layers,
            int(cfg.num_attention_heads),
            int(cfg.hidden_size),
            float(cfg.layer_norm_eps),
        )

    @classmethod
    def from_model(cls, st: Any) -> LeanBert | None:
        """The lean pass for SentenceTransformer `st`, or None when it would not give the same vectors."""
        try:
            modules = [type(m).__name__ for m in st]
            if modules != ["Transformer", "Pooling", "Normalize"]:
                return None
            pooling = st[1]
            mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers >= 6
            if mode is None:
                mode = "mean" if getattr(pooling, "pooling_mode_mean_tokens", False) else None
            if mode != "mean" or getattr(pooling, "include_prompt", True) is not True:
                return None
            bert = st[0].auto_model
            cfg = bert.config
            if type(bert).__name__ != "BertModel" or cfg.hidden_act != "gelu":
                return None
            if getattr(cfg, "position_embedding_type", "absolute") != "absolute":
                return None
            return cls(st, bert)
        except (AttributeError, IndexError, TypeError):
            return None

    def __call__(self, texts: list[str]) -> npt.NDArray[np.float32]:
        import torch

        features = self.st.tokenize(texts)
        with torch.inference_mode():
            rows = self.forward(features["input_ids"], features["attention_mask"])
        return np.asarray(rows.numpy(), dtype=np.float32)
