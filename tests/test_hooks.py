"""Open heads: head hooks on the layer, BlockTraces and (layer, head) patching in the toy model, head naming."""

from __future__ import annotations

import pytest
import torch

from mha_lib import MultiHeadAttention, gate_heads, head_index, head_label, merge_heads, on_head, toy


def _layer(heads: int = 4, causal: bool = True) -> tuple[MultiHeadAttention, torch.Tensor]:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 16, None, 0.0, heads, qkv_bias=True, causal=causal).eval()
    return mha, torch.randn(2, 6, 16)


# ----------------------------------------------------------------------------------- the layer's hooks


def test_an_identity_hook_changes_nothing() -> None:
    mha, x = _layer()
    expected = mha(x)
    for hook in (lambda c: c, lambda c: None):
        torch.testing.assert_close(mha(x, head_hook=hook), expected, rtol=0, atol=0)
        with mha.register_head_hook(hook):
            torch.testing.assert_close(mha(x), expected, rtol=0, atol=0)
            torch.testing.assert_close(mha.trace(x).output, mha.trace(x, head_gates=torch.ones(4)).output)


@pytest.mark.parametrize("head", [0, 2, 3])
def test_zeroing_a_head_with_a_hook_is_a_gate_of_zero(head: int) -> None:
    mha, x = _layer()
    gates = torch.ones(4)
    gates[head] = 0.0
    gated = mha(x, head_gates=gates)
    assert not torch.allclose(gated, mha(x)), "the head mattered"
    torch.testing.assert_close(mha(x, head_hook=on_head(head, torch.zeros_like)), gated)
    torch.testing.assert_close(mha(x, head_hook=gate_heads(gates)), gated)
    with mha.register_head_hook(on_head(head, torch.zeros_like)):
        torch.testing.assert_close(mha(x), gated)
        torch.testing.assert_close(mha.trace(x).output, gated)
    torch.testing.assert_close(mha(x), mha(x, head_gates=torch.ones(4)))  # the handle removed the hook


def test_a_removed_head_is_its_block_of_out_proj_columns_set_to_zero() -> None:
    mha, x = _layer()
    d_head = mha.head_dim
    with torch.no_grad():
        gated = mha(x, head_hook=on_head(1, torch.zeros_like))
        mha.out_proj.weight[:, d_head : 2 * d_head] = 0.0  # head 1's block of columns of W_O
        torch.testing.assert_close(mha(x), gated)


def test_the_trace_records_the_context_before_the_hooks_and_the_concat_after() -> None:
    mha, x = _layer()
    plain = mha.trace(x)

    def double_head_2(context: torch.Tensor) -> torch.Tensor:
        return context * 2

    trace = mha.trace(x, head_hook=on_head(2, double_head_2))
    torch.testing.assert_close(trace.head_context, plain.head_context, rtol=0, atol=0)  # before the hook
    expected = plain.head_context.clone()
    expected[:, 2] *= 2
    torch.testing.assert_close(trace.concat, merge_heads(expected))  # after the hook
    torch.testing.assert_close(trace.output, mha.out_proj(trace.concat))
    d_head = mha.head_dim
    changed = (trace.concat != plain.concat).any(0).any(0)  # (d_out,): which columns of concat moved
    assert changed[2 * d_head : 3 * d_head].all() and changed.sum() == d_head, "only head 2's block of columns"
    torch.testing.assert_close(trace.output, mha(x, head_hook=on_head(2, double_head_2)))


def test_hooks_run_in_order_gates_then_the_calls_hook_then_the_registered_ones() -> None:
    mha, x = _layer()
    seen = []

    def record(name: str):
        def hook(context: torch.Tensor) -> torch.Tensor:
            seen.append((name, float(context[:, 0].abs().sum())))
            return context + 1.0

        return hook

    with torch.no_grad(), mha.register_head_hook(record("registered")):
        mha(x, head_gates=torch.tensor([0.0, 1.0, 1.0, 1.0]), head_hook=record("call"))
    assert [name for name, _ in seen] == ["call", "registered"]
    assert seen[0][1] == 0.0, "the gate ran first: head 0 is zero when the call's hook sees it"
    assert seen[1][1] == pytest.approx(2 * 6 * mha.head_dim), "the registered hook sees the call's hook's output"


def test_gradients_flow_through_hooks() -> None:
    mha, x = _layer()
    scale = torch.tensor(1.0, requires_grad=True)
    mha(x, head_hook=on_head(1, lambda c: c * scale)).sum().backward()
    gates = torch.ones(4, requires_grad=True)
    mha(x, head_gates=gates).sum().backward()
    torch.testing.assert_close(scale.grad, gates.grad[1])


def test_bad_hooks_are_named() -> None:
    mha, x = _layer()
    with pytest.raises(ValueError, match=r"a head hook must return a tensor of the shape it received, \(2, 4, 6, 4\)"):
        mha(x, head_hook=lambda c: c[:, :2])
    with pytest.raises(TypeError, match="head_hook must be a function"):
        mha(x, head_hook=torch.zeros(4))
    with pytest.raises(TypeError, match="fn must be a function"):
        mha.register_head_hook("zero")
    with pytest.raises(ValueError, match=r"head must be in \[0, 4\)"):
        mha(x, head_hook=on_head(4, torch.zeros_like))
    with pytest.raises(TypeError, match=r"head_gates must be a tensor of shape \(4,\)"):
        mha(x, head_gates=[1, 1, 0, 1])


# ------------------------------------------------------------------------------- the toy model's traces


def _model(**kwargs) -> toy.TinyTransformer:
    args = {"d_model": 16, "num_heads": 2, "num_layers": 3, "seed": 0} | kwargs
    return toy.TinyTransformer(12, 10, **args).eval()


@pytest.mark.parametrize("kwargs", [{}, {"mlp": True}, {"mlp": True, "layer_norm": False, "causal": False}])
def test_block_traces_chain_the_residual_stream(kwargs: dict) -> None:
    model = _model(**kwargs)
    tokens = toy.induction_task(3, 10, 12, max_period=5, seed=0).inputs
    with torch.no_grad():
        traces = model.trace(tokens)
        logits = model(tokens)
        torch.testing.assert_close(traces[0].resid_pre, model.pos(model.embed(tokens)))
    assert len(traces) == 3
    for layer, (block, trace) in enumerate(zip(model.blocks, traces)):
        torch.testing.assert_close(trace.attn_in, block.ln_attn(trace.resid_pre))
        torch.testing.assert_close(trace.resid_mid, trace.resid_pre + trace.attn.output)
        torch.testing.assert_close(trace.attn.output, block.attn(trace.attn_in), atol=1e-5, rtol=1e-5)
        if block.mlp is None:
            assert trace.resid_post is trace.resid_mid
        else:
            torch.testing.assert_close(trace.resid_post, trace.resid_mid + block.mlp(block.ln_mlp(trace.resid_mid)))
        if layer + 1 < len(traces):
            assert traces[layer + 1].resid_pre is trace.resid_post, "block l + 1 reads what block l wrote"
    torch.testing.assert_close(model.unembed(model.ln_final(traces[-1].resid_post)), logits, atol=1e-5, rtol=1e-5)
    assert model.attention(tokens).shape == (3, 3, 2, 10, 10)


def test_patching_a_head_by_layer_and_head_is_a_gate_of_zero() -> None:
    model = _model()
    batch = toy.induction_task(4, 10, 12, max_period=5, seed=0)
    for head in [(0, 1), (2, 0)]:
        gates = torch.ones(3, 2)
        gates[head] = 0.0
        with torch.no_grad():
            expected = model(batch.inputs, head_gates=gates)
            with model.patch_head(head, torch.zeros_like):
                patched = model(batch.inputs)
                patched_trace = model.trace(batch.inputs)
            assert not torch.allclose(patched, model(batch.inputs)), "the handle removed the patch"
        torch.testing.assert_close(patched, expected)
        layer, index = head
        assert (patched_trace[layer].attn.concat[..., index * 8 : (index + 1) * 8] == 0).all()
    ablation = toy.ablation_scores(model, batch)
    with torch.no_grad(), model.patch_head((2, 0), torch.zeros_like):
        patched_loss = toy.task_loss(model, batch, scored=True) - toy.task_loss(model, batch, scored=True,
                                                                               head_gates=torch.ones(3, 2))
    assert float(patched_loss) == 0.0, "gates of 1 do not undo a patch"
    with torch.no_grad():
        with model.patch_head((2, 0), torch.zeros_like):
            with_patch = float(toy.task_loss(model, batch, scored=True))
        base = float(toy.task_loss(model, batch, scored=True))
    assert with_patch - base == pytest.approx(float(ablation[2, 0]), abs=1e-5)


def test_mean_ablation_by_patch_equals_rebuilding_the_layer_by_hand() -> None:
    model = _model()
    tokens = toy.induction_task(4, 10, 12, max_period=5, seed=0).inputs
    layer, head = 1, 1
    block = model.blocks[layer]
    with torch.no_grad():
        traces = model.trace(tokens)
        mean = traces[layer].attn.head_context[:, head].mean(0)  # (T, d_head)
        with model.patch_head((layer, head), lambda c: mean.expand_as(c)):
            patched = model.trace(tokens)
        # By hand: the same layer input, the head's context replaced, merge and out_proj again.
        context = traces[layer].attn.head_context.clone()
        context[:, head] = mean
        expected = traces[layer].resid_pre + block.attn.out_proj(merge_heads(context))
    torch.testing.assert_close(patched[layer].resid_mid, expected)
    torch.testing.assert_close(patched[layer - 1].resid_post, traces[layer - 1].resid_post)  # earlier layers untouched


def test_patch_head_takes_a_layer_head_tuple() -> None:
    model = _model()
    with pytest.raises(TypeError, match="labels like 'L0H1' are for printing only"):
        model.patch_head("L0H1", torch.zeros_like)
    with pytest.raises(TypeError, match=r"head must be a \(layer, head\) tuple"):
        model.patch_head(1, torch.zeros_like)
    with pytest.raises(ValueError, match=r"layer must be in \[0, 3\) \(3 layers\)"):
        model.patch_head((3, 0), torch.zeros_like)
    with pytest.raises(ValueError, match=r"head must be in \[0, 2\) \(2 heads\)"):
        model.patch_head((0, 2), torch.zeros_like)
    with pytest.raises(TypeError, match="fn must be a function"):
        model.patch_head((0, 0), 0.0)


# ------------------------------------------------------------------------------------ naming the heads


def test_heads_are_named_by_layer_and_head_with_ten_or_more_heads() -> None:
    model = toy.TinyTransformer(12, 8, d_model=24, num_heads=12, num_layers=2, seed=0).eval()
    batch = toy.induction_task(4, 8, 12, max_period=5, seed=0)
    scores = toy.head_scores(model, batch)
    assert scores.index.names == ["layer", "head"] and len(scores) == 24
    assert list(scores.index) == list(head_index(2, 12)) and (1, 11) in scores.index
    labels = toy.head_labels(2, 12)
    assert len(set(labels)) == 24 and labels[23] == head_label(1, 11) == "L1H11" and labels[11] == "L0H11"
    # Each row holds its own head's scores: layer 1, head 11 of the attention weights.
    weights = model.attention(batch.inputs)  # (L, B, h, T, T)
    expected = toy.previous_token_score(weights[1])[11]
    assert scores.loc[(1, 11), "previous token"] == pytest.approx(float(expected))
    ablation = toy.ablation_scores(model, batch)
    table = toy.head_table({"ablation dL": ablation})
    assert table.loc[(1, 10), "ablation dL"] == pytest.approx(float(ablation[1, 10]))
    assert table["ablation dL"].idxmax() == tuple(int(i) for i in divmod(int(ablation.argmax()), 12))


def test_prune_heads_reports_layer_and_head_columns_with_ten_or_more_heads() -> None:
    model = toy.TinyTransformer(12, 8, d_model=20, num_heads=10, num_layers=1, seed=0).eval()
    batch = toy.induction_task(4, 8, 12, max_period=5, seed=0)
    curve = toy.prune_heads(model, batch)
    assert list(curve.columns) == ["layer", "head", "loss"] and len(curve) == 11
    removed = [(int(lh[0]), int(lh[1])) for lh in curve[["layer", "head"]].iloc[1:].itertuples(index=False)]
    assert sorted(removed) == list(head_index(1, 10))
    gates = torch.ones(1, 10)
    for k, head in enumerate(removed, start=1):
        gates[head] = 0.0
        with torch.no_grad():
            assert curve["loss"].iloc[k] == pytest.approx(float(toy.task_loss(model, batch, scored=True,
                                                                                head_gates=gates)))


def test_head_table_and_head_label_refuse_bad_input() -> None:
    with pytest.raises(ValueError, match=r"scores\['a'\] must be a \(layers, heads\) tensor"):
        toy.head_table({"a": torch.ones(4)})
    with pytest.raises(ValueError, match="has shape"):
        toy.head_table({"a": torch.ones(2, 2), "b": torch.ones(2, 3)})
    with pytest.raises(TypeError, match="layer must be an int"):
        head_label(0.0, 1)


def test_a_forward_hook_may_call_trace_without_recursion() -> None:
    mha, x = _layer()
    calls = []

    def hook(module, inputs, output):
        calls.append(1)
        return module.trace(inputs[0]).output  # what old notebooks did: no second call of the hook

    with torch.no_grad():
        expected = mha(x)
        handle = mha.register_forward_hook(hook)
        torch.testing.assert_close(mha(x), expected, atol=1e-5, rtol=1e-5)
        handle.remove()
    assert calls == [1]
