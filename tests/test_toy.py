"""mha_lib.toy: task generators, the gated tiny transformer, training, head detectors and importance scores."""

from __future__ import annotations

import functools

import pandas as pd
import pytest
import torch

from mha_lib import toy

# ------------------------------------------------------------------------------------------ tasks


def test_reverse_task_targets_are_the_inputs_backwards() -> None:
    batch = toy.reverse_task(8, 6, 10, seed=0)
    assert batch.inputs.shape == batch.targets.shape == (8, 6)
    assert torch.equal(batch.targets, batch.inputs.flip(1))
    assert batch.scored.all() and batch.periods is None
    assert int(batch.inputs.min()) >= 0 and int(batch.inputs.max()) < 10


def test_sort_task_targets_are_sorted_inputs() -> None:
    batch = toy.sort_task(8, 6, 10, seed=0)
    assert torch.equal(batch.targets, batch.inputs.sort(dim=1).values)
    assert (batch.targets.diff(dim=1) >= 0).all()


def test_induction_task_starts_with_bos_and_repeats_with_random_periods() -> None:
    length, vocab = 24, 16
    batch = toy.induction_task(256, length, vocab, min_period=4, max_period=10, seed=0)
    x, p = batch.inputs, batch.periods
    assert p is not None
    assert (x[:, 0] == toy.BOS).all(), "BOS first"
    assert (x[:, 1:] != toy.BOS).all() and int(x.max()) < vocab, "BOS only at position 0"
    assert int(p.min()) == 4 and int(p.max()) == 10, "periods cover the range"
    assert len(p.unique()) == 7, "periods are random, not fixed"
    for row, period in zip(x, p.tolist()):
        body = row[1:]
        assert torch.equal(body[period:], body[:-period]), "the body repeats with its period"
        assert len(body[:period].unique()) == period, "a pattern has distinct tokens"
    assert torch.equal(batch.targets[:, :-1], x[:, 1:]), "next-token targets"
    assert torch.equal(batch.scored, torch.arange(length)[None, :] >= p[:, None] + 1)


def test_induction_scored_positions_are_exactly_the_repeated_tokens() -> None:
    batch = toy.induction_task(32, 20, 16, seed=1)
    seen_before = toy.induction_targets(batch.inputs).any(-1)  # (B, T): the token occurred earlier
    assert torch.equal(seen_before, batch.scored)


def test_generators_are_seeded() -> None:
    a = toy.induction_task(4, 12, 16, seed=3)
    b = toy.induction_task(4, 12, 16, generator=torch.Generator().manual_seed(3))
    c = toy.induction_task(4, 12, 16, seed=4)
    assert torch.equal(a.inputs, b.inputs) and not torch.equal(a.inputs, c.inputs)
    with pytest.raises(ValueError, match="either generator or seed"):
        toy.reverse_task(2, 4, 5, seed=0, generator=torch.Generator())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"vocab_size": 8, "max_period": 10}, "vocab_size - 1"),
        ({"min_period": 6, "max_period": 5}, "min_period must be <= max_period"),
        ({"length": 0}, "length must be >= 2"),
    ],
)
def test_induction_task_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"batch_size": 2, "length": 12, "vocab_size": 16} | kwargs
    with pytest.raises(ValueError, match=match):
        toy.induction_task(**args)


# ------------------------------------------------------------------------------------------ model


def _model(**kwargs) -> toy.TinyTransformer:
    args = {"d_model": 16, "num_heads": 2, "num_layers": 2, "seed": 0} | kwargs
    return toy.TinyTransformer(12, 10, **args).eval()


def test_model_shapes_and_seeded_init_leave_the_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a, b = _model(), _model()
    assert torch.equal(torch.rand(3), expected), "seed= does not consume the global generator"
    tokens = toy.induction_task(3, 10, 12, max_period=5, seed=0).inputs
    assert a(tokens).shape == (3, 10, 12)
    torch.testing.assert_close(a(tokens), b(tokens), rtol=0, atol=0)
    traces = a.trace(tokens)
    assert len(traces) == 2 and traces[0].attn.weights.shape == (3, 2, 10, 10)
    assert a.attention(tokens).shape == (2, 3, 2, 10, 10)


@pytest.mark.parametrize(
    "kwargs", [{}, {"positions": "sinusoidal", "causal": False}, {"mlp": True, "layer_norm": False}]
)
def test_gates_of_one_leave_the_model_unchanged(kwargs: dict) -> None:
    model = _model(**kwargs)
    tokens = toy.reverse_task(4, 10, 12, seed=0).inputs
    assert torch.equal(model(tokens, head_gates=torch.ones(2, 2)), model(tokens))
    ones = torch.ones(2, 2)
    assert torch.equal(model.trace(tokens)[1].attn.output, model.trace(tokens, head_gates=ones)[1].attn.output)


def test_a_gate_of_zero_removes_the_head_exactly() -> None:
    model = _model()
    tokens = toy.induction_task(4, 10, 12, max_period=5, seed=0).inputs
    gates = torch.ones(2, 2)
    gates[1, 0] = 0.0
    before = model(tokens, head_gates=gates)
    assert not torch.allclose(before, model(tokens)), "the head mattered"
    attn = model.blocks[1].attn
    rows = slice(0, attn.head_dim)  # head 0's rows of W_query, W_key and W_value
    with torch.no_grad():
        for linear in (attn.W_query, attn.W_key, attn.W_value):
            linear.weight[rows] = torch.randn_like(linear.weight[rows]) * 10
    assert torch.equal(model(tokens, head_gates=gates), before), "nothing of the gated head reaches the output"
    with torch.no_grad():
        attn.out_proj.weight[:, rows] = 0.0
    assert torch.equal(model(tokens), before), "gate 0 == the head's columns of out_proj set to 0"


def test_model_rejects_bad_inputs() -> None:
    model = _model()
    with pytest.raises(ValueError, match=r"head_gates must have shape \(2, 2\)"):
        model(torch.zeros(1, 4, dtype=torch.long), head_gates=torch.ones(2))
    with pytest.raises(TypeError, match="tokens must hold integer token ids, got dtype torch.float32"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"tokens must have shape \(batch, tokens\), got \(4,\): add the batch"):
        model(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="positions must be"):
        toy.TinyTransformer(12, 10, positions="rotary")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ training


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adamw_steps_exactly_as_torch_optim_adamw(weight_decay: float) -> None:
    """toy.AdamW is torch.optim.AdamW's update written out: the same weights to the last bit after 30 steps."""
    models = [_model(), _model()]
    task = functools.partial(toy.induction_task, length=10, vocab_size=12, max_period=5)
    optimizers = [toy.AdamW(models[0].parameters(), lr=1e-2, weight_decay=weight_decay),
                  torch.optim.AdamW(models[1].parameters(), lr=1e-2, weight_decay=weight_decay)]
    for step in range(30):
        batch = task(8, generator=torch.Generator().manual_seed(step))
        for model, optimizer in zip(models, optimizers):
            optimizer.zero_grad()
            toy.task_loss(model, batch).backward()
            optimizer.step()
    for (name, ours), theirs in zip(models[0].state_dict().items(), models[1].state_dict().values()):
        assert torch.equal(ours, theirs), name
    start = _model().state_dict()
    assert any(not torch.equal(value, start[name]) for name, value in models[0].state_dict().items())  # it trained


def test_train_is_deterministic_and_restores_the_thread_count() -> None:
    task = functools.partial(toy.induction_task, length=10, vocab_size=12, max_period=5)
    threads = torch.get_num_threads()
    runs = [toy.train(_model(), task, steps=4, batch_size=8, seed=7, progress=False) for _ in range(2)]
    assert torch.get_num_threads() == threads
    pd.testing.assert_frame_equal(runs[0], runs[1], check_exact=True)
    assert list(runs[0].columns) == ["loss", "scored loss"] and len(runs[0]) == 4
    other = toy.train(_model(), task, steps=4, batch_size=8, seed=8, progress=False)
    assert not runs[0].equals(other)


def test_train_stops_early_as_a_prefix_of_the_full_run() -> None:
    """``stop_below`` ends training at the first step whose last ``stop_window`` scored losses average below it; the
    history and the weights are exactly those of a run with that many steps (same optimizer, same batches)."""
    task = functools.partial(toy.reverse_task, length=8, vocab_size=10)
    kwargs = dict(batch_size=16, lr=1e-2, seed=3, progress=False)
    full_model = _model(num_layers=1, causal=False)
    full = toy.train(full_model, task, steps=60, **kwargs)
    smooth = full["scored loss"].rolling(5).mean()
    level = float(smooth.iloc[30])  # reached at step 30 or earlier
    stop = int((smooth < level).idxmax()) if (smooth < level).any() else 59
    stopped_model = _model(num_layers=1, causal=False)
    stopped = toy.train(stopped_model, task, steps=60, stop_below=level, stop_window=5, **kwargs)
    assert len(stopped) == stop + 1 < 60 and list(stopped.index) == list(range(stop + 1))
    pd.testing.assert_frame_equal(stopped, full.iloc[: stop + 1], check_exact=True)
    same_length_model = _model(num_layers=1, causal=False)
    toy.train(same_length_model, task, steps=stop + 1, **kwargs)
    for a, b in zip(stopped_model.parameters(), same_length_model.parameters()):
        assert torch.equal(a, b)
    assert len(toy.train(_model(num_layers=1, causal=False), task, steps=20, stop_below=-1.0, **kwargs)) == 20
    with pytest.raises(TypeError, match="stop_below"):
        toy.train(_model(), task, steps=2, stop_below="0.1", progress=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="stop_window"):
        toy.train(_model(), task, steps=2, stop_below=0.1, stop_window=0, progress=False)


def test_train_stops_early_when_every_recent_loss_is_below() -> None:
    """stop_when="every" ends the run once `stop_window` training batches in a row score under it; the optimizer and the
    batch stream are those of the full run, so the early stop gives the full run's first steps, weights included."""
    task = functools.partial(toy.reverse_task, length=10, vocab_size=12)
    model = _model(num_layers=1, causal=False)
    full_model = _model(num_layers=1, causal=False)
    full = toy.train(full_model, task, steps=60, batch_size=16, lr=1e-2, seed=3, progress=False)
    threshold = float(full["scored loss"].iloc[:40].max())  # every batch from the start is under it ...
    early = toy.train(model, task, steps=60, batch_size=16, lr=1e-2, seed=3, progress=False,
                      stop_below=threshold + 1e-6, stop_window=5, stop_when="every")
    assert len(early) == 5 and list(early.index) == list(range(5))  # ... so it stops after `stop_window` steps
    pd.testing.assert_frame_equal(early, full.iloc[:5], check_exact=True)
    again = _model(num_layers=1, causal=False)
    toy.train(again, task, steps=5, batch_size=16, lr=1e-2, seed=3, progress=False)
    for a, b in zip(model.parameters(), again.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    never = toy.train(_model(num_layers=1, causal=False), task, steps=8, batch_size=16, seed=3, progress=False,
                      stop_below=1e-9)
    assert len(never) == 8
    with pytest.raises(ValueError, match="stop_when"):
        toy.train(_model(), task, steps=2, progress=False, stop_below=0.1, stop_when="always")


def test_train_lowers_the_loss_and_task_loss_matches_cross_entropy() -> None:
    model = _model(num_layers=1, causal=False)
    task = functools.partial(toy.reverse_task, length=10, vocab_size=12)
    history = toy.train(model, task, steps=40, batch_size=16, lr=1e-2, progress=False)
    assert history["loss"].iloc[-5:].mean() < history["loss"].iloc[:5].mean() - 0.3
    batch = task(8, seed=0)
    logits = model(batch.inputs)
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, 12), batch.targets.reshape(-1))
    torch.testing.assert_close(toy.task_loss(model, batch), expected)
    assert 0.0 <= toy.accuracy(model, batch) <= 1.0
    assert toy.uniform_loss(12) == pytest.approx(2.4849, abs=1e-4)


# ------------------------------------------------------------------------------------------ detectors


def _causal_uniform(t: int) -> torch.Tensor:
    w = torch.ones(t, t).tril()
    return w / w.sum(-1, keepdim=True)


def test_a_perfect_previous_token_pattern_scores_one() -> None:
    t = 6
    w = torch.zeros(t, t)
    w[0, 0] = 1.0
    w[torch.arange(1, t), torch.arange(t - 1)] = 1.0
    scores = toy.previous_token_score(torch.stack([w, torch.eye(t)]))  # (h=2, T, T)
    torch.testing.assert_close(scores, torch.tensor([1.0, 0.0], dtype=torch.float64))


def test_mirror_and_bos_detectors_on_hand_built_patterns() -> None:
    t = 5
    mirror = torch.eye(t).flip(-1)
    bos = torch.zeros(t, t)
    bos[:, 0] = 1.0
    w = torch.stack([mirror, bos, _causal_uniform(t)])[None]  # (B=1, h=3, T, T)
    torch.testing.assert_close(toy.mirror_score(w)[:2], torch.tensor([1.0, 0.2], dtype=torch.float64))
    share = toy.bos_share(w)
    torch.testing.assert_close(share[1], torch.tensor(1.0, dtype=torch.float64))
    # causal uniform: query i puts 1/(i+1) on BOS; averaged over queries 1..4
    torch.testing.assert_close(share[2], torch.tensor((1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4, dtype=torch.float64))
    only_last = torch.zeros(1, t, dtype=torch.bool)
    only_last[0, -1] = True
    torch.testing.assert_close(toy.bos_share(w, only_last)[2], torch.tensor(0.2, dtype=torch.float64))


def test_a_perfect_induction_pattern_scores_one() -> None:
    batch = toy.induction_task(8, 16, 12, min_period=3, max_period=6, seed=0)
    target = toy.induction_targets(batch.inputs).double()  # (B, T, T)
    perfect = target / target.sum(-1, keepdim=True).clamp_min(1.0)
    perfect[:, 0, 0] = 1.0  # rows without an earlier occurrence are not scored: put them anywhere
    none_left = perfect.sum(-1) == 0
    perfect[none_left] = torch.eye(16, dtype=torch.float64)[None].expand(8, 16, 16)[none_left]
    prev = torch.diag_embed(torch.ones(15), offset=-1)
    prev[0, 0] = 1.0
    w = torch.stack([perfect, prev[None].expand(8, 16, 16).double()], dim=1)  # (B, h=2, T, T)
    scores = toy.induction_score(w, batch.inputs)
    torch.testing.assert_close(scores[0], torch.tensor(1.0, dtype=torch.float64))
    assert float(scores[1]) < 0.2
    # query i's token repeats the one `period` back, so the perfect key is i - period + 1
    p = int(batch.periods[0])
    i = p + 3
    assert bool(target[0, i, i - p + 1]) and int(target[0, i].sum()) == 1


def test_detectors_reject_non_square_weights() -> None:
    with pytest.raises(ValueError, match="weights must have shape"):
        toy.previous_token_score(torch.zeros(2, 3, 4))


def test_head_scores_table() -> None:
    model = _model()
    batch = toy.induction_task(4, 10, 12, max_period=5, seed=0)
    table = toy.head_scores(model, batch)
    assert list(table.index) == [(0, 0), (0, 1), (1, 0), (1, 1)] and table.index.names == ["layer", "head"]
    assert list(table.columns) == ["previous token", "induction", "mirror", "BOS"]
    assert ((table >= 0) & (table <= 1 + 1e-9)).all().all()


# ------------------------------------------------------------------------------------------ importance


def test_ablation_scores_are_the_loss_rise_with_one_gate_at_zero() -> None:
    model = _model()
    batch = toy.induction_task(8, 10, 12, max_period=5, seed=0)
    scores = toy.ablation_scores(model, batch)
    gates = torch.ones(2, 2)
    gates[0, 1] = 0.0
    with torch.no_grad():
        expected = toy.task_loss(model, batch, scored=True, head_gates=gates) - toy.task_loss(model, batch, scored=True)
    torch.testing.assert_close(scores[0, 1], expected)


def test_gate_gradients_match_finite_differences() -> None:
    model = _model().double()
    batch = toy.induction_task(8, 10, 12, max_period=5, seed=0)
    grad = toy.gate_gradients(model, batch, head_gates=torch.ones(2, 2, dtype=torch.float64))
    eps = 1e-6
    for layer, head in ((0, 0), (1, 1)):
        plus, minus = torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64)
        plus[layer, head] += eps
        minus[layer, head] -= eps
        with torch.no_grad():
            diff = (toy.task_loss(model, batch, scored=True, head_gates=plus)
                    - toy.task_loss(model, batch, scored=True, head_gates=minus)) / (2 * eps)
        torch.testing.assert_close(grad[layer, head], diff, rtol=1e-5, atol=1e-7)


def test_gradient_scores_average_absolute_per_sequence_gradients() -> None:
    model = _model()
    batch = toy.induction_task(3, 10, 12, max_period=5, seed=0)
    scores = toy.gradient_scores(model, batch)
    singles = [
        toy.TaskBatch(batch.inputs[i : i + 1], batch.targets[i : i + 1], batch.scored[i : i + 1]) for i in range(3)
    ]
    weights = batch.scored.sum(1) / batch.scored.sum()  # (B,): each scored token counts once
    grads = torch.stack([toy.gate_gradients(model, one) for one in singles])  # (B, L, h)
    torch.testing.assert_close(scores, (grads.abs() * weights[:, None, None]).sum(0))
    torch.testing.assert_close((grads * weights[:, None, None]).sum(0), toy.gate_gradients(model, batch))
    assert (scores >= toy.gate_gradients(model, batch).abs() - 1e-6).all(), "|mean| <= mean |.|"


@pytest.mark.parametrize("by", ["ablation", "gradient"])
def test_prune_heads_removes_every_head_once(by: str) -> None:
    model = _model()
    batch = toy.induction_task(4, 10, 12, max_period=5, seed=0)
    curve = toy.prune_heads(model, batch, by=by)
    assert list(curve.index) == [0, 1, 2, 3, 4]
    assert list(curve.columns) == ["layer", "head", "loss"]
    assert curve[["layer", "head"]].iloc[0].isna().all(), "row 0: nothing removed yet"
    removed = [(int(layer), int(head)) for layer, head in curve[["layer", "head"]].iloc[1:].itertuples(index=False)]
    assert sorted(removed) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    with torch.no_grad():
        full = float(toy.task_loss(model, batch, scored=True))
        none = float(toy.task_loss(model, batch, scored=True, head_gates=torch.zeros(2, 2)))
    assert curve["loss"].iloc[0] == pytest.approx(full) and curve["loss"].iloc[-1] == pytest.approx(none)
    gates = torch.ones(2, 2)
    for k, (layer, head) in enumerate(removed, start=1):  # every row: the loss with its heads removed, exactly
        gates[layer, head] = 0.0
        with torch.no_grad():
            assert curve["loss"].iloc[k] == float(toy.task_loss(model, batch, scored=True, head_gates=gates)), k
    if by == "ablation":
        first = toy.head_table({"dL": toy.ablation_scores(model, batch)})["dL"].idxmin()  # (layer, head)
        assert removed[0] == first


def test_head_scores_with_gates_score_the_later_layers_without_the_gated_head() -> None:
    model = _model()
    batch = toy.induction_task(8, 10, 12, max_period=5, seed=0)
    table = toy.head_scores(model, batch)
    pd.testing.assert_frame_equal(toy.head_scores(model, batch, head_gates=torch.ones(2, 2)), table)
    gates = torch.ones(2, 2)
    gates[0, 1] = 0.0
    gated = toy.head_scores(model, batch, head_gates=gates)
    pd.testing.assert_frame_equal(gated.loc[[0]], table.loc[[0]])  # a gate acts after the head's own pattern
    assert not gated.loc[[1]].equals(table.loc[[1]]), "layer 1 reads a stream without head (0, 1)"


def test_sequence_gate_gradients_are_each_sequences_own_gradient() -> None:
    model = _model()
    batch = toy.induction_task(4, 10, 12, max_period=5, seed=0)
    scored = batch.scored.clone()
    scored[2] = False  # a sequence without loss positions gets 0
    batch = toy.TaskBatch(batch.inputs, batch.targets, scored, batch.periods)
    gates = torch.ones(2, 2)
    gates[1, 0] = 0.0
    for head_gates in (None, gates):
        grads = toy.sequence_gate_gradients(model, batch, head_gates=head_gates)  # (B, L, h)
        assert grads.shape == (4, 2, 2)
        for i in (0, 1, 3):
            one = toy.TaskBatch(batch.inputs[i : i + 1], batch.targets[i : i + 1], batch.scored[i : i + 1])
            torch.testing.assert_close(grads[i], toy.gate_gradients(model, one, head_gates=head_gates))
        assert torch.equal(grads[2], torch.zeros(2, 2))
    assert all(not block.attn._head_hooks for block in model.blocks), "no hook left behind"
    every = toy.sequence_gate_gradients(model, batch, scored=False)[2]
    one = toy.TaskBatch(batch.inputs[2:3], batch.targets[2:3], batch.scored[2:3])
    torch.testing.assert_close(every, toy.gate_gradients(model, one, scored=False))


def test_gradient_scores_in_one_pass_equal_the_loop() -> None:
    model = _model()
    batch = toy.induction_task(6, 10, 12, max_period=5, seed=1)
    gates = torch.ones(2, 2)
    gates[0, 0] = 0.0
    for head_gates in (None, gates):
        torch.testing.assert_close(toy.gradient_scores(model, batch, head_gates=head_gates, one_pass=True),
                                   toy.gradient_scores(model, batch, head_gates=head_gates))


def test_prune_heads_reports_a_held_out_batch_and_one_pass_keeps_the_order() -> None:
    model = _model()
    batch = toy.induction_task(6, 10, 12, max_period=5, seed=0)
    held_out = toy.induction_task(6, 10, 12, max_period=5, seed=1)
    plain = toy.prune_heads(model, batch, by="gradient")
    curve = toy.prune_heads(model, batch, by="gradient", held_out=held_out, one_pass=True)
    assert list(curve.columns) == ["layer", "head", "loss", "held-out loss"]
    pd.testing.assert_frame_equal(curve[["layer", "head"]], plain[["layer", "head"]])
    with torch.no_grad():
        full = float(toy.task_loss(model, held_out, scored=True))
        none = float(toy.task_loss(model, held_out, scored=True, head_gates=torch.zeros(2, 2)))
    assert curve["held-out loss"].iloc[0] == pytest.approx(full)
    assert curve["held-out loss"].iloc[-1] == pytest.approx(none)
    with pytest.raises(TypeError, match="one_pass must be True or False"):
        toy.prune_heads(model, batch, one_pass="yes")  # type: ignore[arg-type]
