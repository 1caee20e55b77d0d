"""The ONNX graph of a sentence-transformers BERT encoder (Transformer -> mean Pooling -> Normalize),
written from the model's own weights (no exporter, no download).

The graph uses onnxruntime's fused CPU operators, the ones its transformer optimizer produces for
BERT: EmbedLayerNormalization (word + position + token type 0, LayerNorm, mask lengths), Attention
(QKV projection and multi-head attention over the unpadded keys), Gelu (exact erf), the projections'
biases inside their matmuls; the residual Add + LayerNormalization stay unfused (see
`SESSION_DISABLED_OPTIMIZERS`); then the masked mean and L2 normalization, so the output is the
sentence vector itself.

Inputs `input_ids` and `attention_mask` (int64, batch x tokens, right-padded); output `embedding`
(float32, batch x hidden).

`quantize` names the projections to run in int8 (see `PROJECTIONS`; e.g. "l0.ffn_out"): weights
symmetric per output channel, activations quantized per call (onnxruntime's DynamicQuantizeMatMul
and QAttention, on VNNI where the CPU has it).

`blockwise` names projections to run as onnxruntime's MatMulNBits instead: 8-bit weights and int8
activations, each scaled per block of `BLOCK` input channels (per token for the activations), which
keeps the precision where one activation scale per call cannot (the first layers' feed-forward
outputs) at a fraction of a float32 product's time.

`smooth` gives a quantized projection per-input-channel factors `s` (SmoothQuant): its input is
multiplied by `1 / s` and its weight rows by `s`, the same product in float, but the few input
channels with outliers (BERT's LayerNorm outputs have some) no longer set the one activation scale
of the whole call, so the int8 activations keep their precision.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

#: the four projections of a layer: fused QKV (in Attention), attention output, FFN in, FFN out
PROJECTIONS: tuple[str, ...] = ("qkv", "attn_out", "ffn_in", "ffn_out")
MS = "com.microsoft"
#: onnxruntime fusions to turn off in every session of these graphs: on CPU its SkipLayerNormalization
#: (Add + LayerNormalization) runs several times slower than the two apart, BiasGelu slower than Gelu
SESSION_DISABLED_OPTIMIZERS: tuple[str, ...] = ("SkipLayerNormFusion", "BiasGeluFusion")

Array = npt.NDArray[Any]


def projection_names(layers: int) -> list[str]:
    """Every quantizable projection, "l<i>.<kind>"."""
    return [f"l{i}.{kind}" for i in range(layers) for kind in PROJECTIONS]


BLOCK = 128  # input channels per scale of a blockwise projection


def quantize_blocks(w: Array, block: int = BLOCK) -> tuple[Array, Array]:
    """(uint8 weights (out, blocks, block), scales (out x blocks)) of a (in, out) float matrix for
    MatMulNBits with 8 bits: symmetric per block of `block` input rows of each column, stored + 128 (the
    operator's zero point when none is given)."""
    rows, cols = w.shape
    blocks = -(-rows // block)
    padded = np.zeros((blocks * block, cols), dtype=np.float32)
    padded[:rows] = w
    per = padded.T.reshape(cols, blocks, block)
    scale = np.abs(per).max(axis=2) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(per / scale[:, :, None]), -127, 127) + 128
    return q.astype(np.uint8), scale.reshape(-1)


def quantize_columns(w: Array) -> tuple[Array, Array, Array]:
    """(int8 weights, per-column scale, zero points) of a (in, out) float matrix, symmetric per column."""
    scale = np.abs(w).max(axis=0) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale, np.zeros(w.shape[1], dtype=np.int8)


class _Graph:
    """Collects nodes and initializers; every node is named after its first output."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, name: str, value: npt.ArrayLike) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], *, domain: str = "", **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, outputs, name=outputs[0], domain=domain, **attrs))
        return outputs[0]

    def matmul(
        self,
        x: str,
        w: Array,
        name: str,
        quantized: bool,
        smooth: Array | None = None,
        bias: Array | None = None,
        blockwise: bool = False,
    ) -> str:
        """x @ w (+ bias), in int8 (DynamicQuantizeMatMul) when `quantized`, with `x / smooth` and
        `smooth`-scaled weight rows when given; blockwise int8 (MatMulNBits) when `blockwise`."""
        if blockwise:
            q, scales = quantize_blocks(w)
            ins = [x, self.const(f"{name}.bq", q), self.const(f"{name}.bs", scales), "", ""]
            ins.append(self.const(f"{name}.b", bias) if bias is not None else "")
            rows, cols = w.shape
            # accuracy level 4: the inputs are quantized to int8 per block, the products run in int8
            attrs = {"K": rows, "N": cols, "bits": 8, "block_size": BLOCK, "accuracy_level": 4}
            return self.node("MatMulNBits", ins, [name], domain=MS, **attrs)
        if not quantized:
            product = self.node(
                "MatMul", [x, self.const(f"{name}.w", w)], [name if bias is None else f"{name}.mm"]
            )
            if bias is None:
                return product
            return self.node("Add", [product, self.const(f"{name}.b", bias)], [name])
        if smooth is not None:
            inverse = (1.0 / smooth).astype(np.float32)
            x = self.node("Mul", [x, self.const(f"{name}.inv_s", inverse)], [f"{name}.smoothed"])
            w = (w * smooth[:, None]).astype(np.float32)
        q, scale, zero = quantize_columns(w)
        ins = [
            x,
            self.const(f"{name}.wq", q),
            self.const(f"{name}.ws", scale),
            self.const(f"{name}.wz", zero),
        ]
        if bias is not None:
            ins.append(self.const(f"{name}.b", bias))
        return self.node("DynamicQuantizeMatMul", ins, [name], domain=MS)

    def residual_norm(self, x: str, skip: str, gamma: Array, beta: Array, name: str, eps: float) -> str:
        """LayerNorm(x + skip). Plain Add and LayerNormalization: onnxruntime's fused
        SkipLayerNormalization runs several times slower on CPU (see SESSION_DISABLED_OPTIMIZERS)."""
        total = self.node("Add", [x, skip], [f"{name}.sum"])
        ins = [total, self.const(f"{name}.g", gamma), self.const(f"{name}.beta", beta)]
        return self.node("LayerNormalization", ins, [name], axis=-1, epsilon=eps)

    def attention(
        self, x: str, w: Array, b: Array, mask_index: str, name: str, heads: int, quantized: bool
    ) -> str:
        if not quantized:
            ins = [x, self.const(f"{name}.w", w), self.const(f"{name}.b", b), mask_index]
            return self.node("Attention", ins, [name], domain=MS, num_heads=heads)
        q, scale, zero = quantize_columns(w)
        xq, xs, xz = f"{name}.xq", f"{name}.xs", f"{name}.xz"
        self.node("DynamicQuantizeLinear", [x], [xq, xs, xz])
        ins = [
            xq,
            self.const(f"{name}.wq", q),
            self.const(f"{name}.b", b),
            xs,
            self.const(f"{name}.ws", scale),
            mask_index,
            xz,
            self.const(f"{name}.wz", zero),
        ]
        return self.node("QAttention", ins, [name], domain=MS, num_heads=heads)


def _layer(
    g: _Graph,
    w: Mapping[str, Array],
    i: int,
    x: str,
    mask_index: str,
    *,
    heads: int,
    eps: float,
    quantize: Collection[str],
    smooth: Mapping[str, Array],
    blockwise: Collection[str],
) -> str:
    p = f"encoder.layer.{i}."
    a = p + "attention.self."
    wqkv = np.concatenate([w[a + "query.weight"], w[a + "key.weight"], w[a + "value.weight"]], 0).T
    bqkv = np.concatenate([w[a + "query.bias"], w[a + "key.bias"], w[a + "value.bias"]])
    att = g.attention(x, wqkv, bqkv, mask_index, f"l{i}.qkv", heads, f"l{i}.qkv" in quantize)

    def project(inp: str, kind: str, dense: str) -> str:
        """`inp` through the layer's `dense` Linear (weight and bias), as `quantize` / `blockwise` say."""
        name = f"l{i}.{kind}"
        weight, bias = w[p + dense + ".weight"].T, w[p + dense + ".bias"]
        return g.matmul(
            inp, weight, name, name in quantize, smooth.get(name), bias=bias, blockwise=name in blockwise
        )

    out = project(att, "attn_out", "attention.output.dense")
    ln1 = w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]
    x = g.residual_norm(out, x, *ln1, f"l{i}.x1", eps)
    h = g.node("Gelu", [project(x, "ffn_in", "intermediate.dense")], [f"l{i}.gelu"], domain=MS)
    out = project(h, "ffn_out", "output.dense")
    ln2 = w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
    return g.residual_norm(out, x, *ln2, f"l{i}.x2", eps)


def _embeddings(g: _Graph, w: Mapping[str, Array], eps: float) -> tuple[str, str]:
    """(hidden states, mask lengths): token type is always 0, so its row is folded into the positions."""
    e = "embeddings."
    positions = w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0]
    ids = g.node("Cast", ["input_ids"], ["ids32"], to=6)  # int32
    mask = g.node("Cast", ["attention_mask"], ["mask32"], to=6)
    ins = [
        ids,
        "",
        g.const("word", w[e + "word_embeddings.weight"]),
        g.const("pos", positions),
        "",
        g.const("emb.ln.g", w[e + "LayerNorm.weight"]),
        g.const("emb.ln.b", w[e + "LayerNorm.bias"]),
        mask,
    ]
    g.node("EmbedLayerNormalization", ins, ["x0", "mask_index"], domain=MS, epsilon=eps)
    return "x0", "mask_index"


def _pool(g: _Graph, x: str) -> str:
    """Mean over the real tokens, then L2 normalization (sentence-transformers' Pooling + Normalize)."""
    m = g.node(
        "Unsqueeze", [g.node("Cast", ["attention_mask"], ["maskf"], to=1), g.const("axis2", [2])], ["mask3"]
    )
    axis1 = g.const("axis1", [1])
    summed = g.node("ReduceSum", [g.node("Mul", [x, m], ["masked"]), axis1], ["summed"], keepdims=0)
    count = g.node(
        "Max",
        [g.node("ReduceSum", [m, axis1], ["count0"], keepdims=0), g.const("tiny", np.float32(1e-9))],
        ["count"],
    )
    return g.node("LpNormalization", [g.node("Div", [summed, count], ["pooled"])], ["embedding"], axis=1, p=2)


def build_model(
    weights: Mapping[str, Array],
    *,
    heads: int,
    eps: float,
    quantize: Collection[str] = (),
    smooth: Mapping[str, Array] | None = None,
    blockwise: Collection[str] = (),
) -> Any:
    """The onnx.ModelProto of the encoder for BERT `weights` (transformers' state dict names)."""
    from onnx import TensorProto, helper

    layers = sum(1 for k in weights if k.endswith("attention.self.query.weight"))
    unknown = set(quantize) - set(projection_names(layers))
    if unknown:
        raise ValueError(f"unknown projections to quantize: {sorted(unknown)}")
    smooth = dict(smooth or {})
    unsmoothable = {n for n in smooth if n not in quantize or n.endswith(".qkv")}
    if unsmoothable:
        raise ValueError(f"smoothing applies to quantized matmul projections only: {sorted(unsmoothable)}")
    unblockable = {
        n for n in blockwise if n not in projection_names(layers) or n.endswith(".qkv") or n in quantize
    }
    if unblockable:
        raise ValueError(f"blockwise applies to float32 matmul projections only: {sorted(unblockable)}")
    g = _Graph()
    x, mask_index = _embeddings(g, weights, eps)
    for i in range(layers):
        x = _layer(
            g,
            weights,
            i,
            x,
            mask_index,
            heads=heads,
            eps=eps,
            quantize=quantize,
            smooth=smooth,
            blockwise=blockwise,
        )
    _pool(g, x)
    hidden = int(weights["embeddings.word_embeddings.weight"].shape[1])
    graph = helper.make_graph(
        g.nodes,
        "sentence_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        g.inits,
    )
    model = helper.make_model(
        graph, producer_name="loci", opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    )
    model.ir_version = 8
    return model
