"""Notebook 00's check: the shapes of a layer's tensors. The library passes; the usual slips fail at their case."""

from __future__ import annotations

from mha_lib import checks


def _correct(B, T_q, T_k, d_model, h):
    d_head = d_model // h
    return {"queries": (B, h, T_q, d_head), "keys": (B, h, T_k, d_head), "values": (B, h, T_k, d_head),
            "weights": (B, h, T_q, T_k), "head_context": (B, h, T_q, d_head), "output": (B, T_q, d_model)}


def _heads_last(B, T_q, T_k, d_model, h):  # (B, T, h, d_head): the heads not next to the batch
    shapes = _correct(B, T_q, T_k, d_model, h)
    shapes["queries"] = (B, T_q, h, d_model // h)
    return shapes


def _square_weights(B, T_q, T_k, d_model, h):  # self-attention only: (T, T) with T = T_q
    shapes = _correct(B, T_q, T_k, d_model, h)
    shapes["weights"] = (B, h, T_q, T_q)
    return shapes


def _full_width_heads(B, T_q, T_k, d_model, h):  # every head d_model wide
    return {name: shape[:-1] + (d_model,) if name != "weights" else shape
            for name, shape in _correct(B, T_q, T_k, d_model, h).items()}


def _no_head_axis_for_one_head(B, T_q, T_k, d_model, h):  # drops the head axis when h == 1
    shapes = _correct(B, T_q, T_k, d_model, h)
    return shapes if h > 1 else {k: v[:1] + v[2:] if len(v) == 4 else v for k, v in shapes.items()}


def _no_output(B, T_q, T_k, d_model, h):
    shapes = _correct(B, T_q, T_k, d_model, h)
    del shapes["output"]
    return shapes


def _lists(B, T_q, T_k, d_model, h):  # lists instead of tuples are fine
    return {k: list(v) for k, v in _correct(B, T_q, T_k, d_model, h).items()}


ROWS = [
    (checks.attention_shapes, _lists,
     [(_heads_last, 1), (_square_weights, 2), (_full_width_heads, 1), (_no_head_axis_for_one_head, 3),
      (_no_output, 1)]),
]
