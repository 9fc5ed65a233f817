"""benchmarks/mha_benchmark.py's decoding section (notebook 11): cached decoding computes what the full pass does,
the caches hold what the formula says, --quick writes its table, and the recorded run covers T = 128, 512, 2048.

No speed is asserted on a quick run (another process may share the cores); the recorded table is checked for its
shape and for the cache sizes, which do not depend on the machine.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from mha_lib import kv_cache_bytes_per_token

ROOT = Path(__file__).resolve().parents[1]
if "mha_benchmark" in sys.modules:
    mb = sys.modules["mha_benchmark"]
else:
    _spec = importlib.util.spec_from_file_location("mha_benchmark", ROOT / "benchmarks" / "mha_benchmark.py")
    mb = importlib.util.module_from_spec(_spec)
    sys.modules["mha_benchmark"] = mb
    _spec.loader.exec_module(mb)

QUICK = mb.DecodeConfig(**mb.QUICK_DECODE, repeats=1)


@pytest.mark.parametrize(("variant", "kv_heads"), QUICK.variants)
def test_cached_decoding_gives_the_logits_of_the_full_pass(variant: str, kv_heads: int) -> None:
    torch.manual_seed(0)
    model = mb.Decoder(QUICK, kv_heads).eval()
    assert model.blocks[0].num_kv_heads == kv_heads and model.blocks[0].rope_base == 10000.0
    assert mb.check_decoding(model, QUICK, 32) < 1e-4


def test_greedy_decoding_writes_the_same_tokens_with_and_without_caches() -> None:
    torch.manual_seed(0)
    model = mb.Decoder(QUICK, 2).eval()
    prompt = torch.randint(0, QUICK.vocab, (1, 12), generator=torch.Generator().manual_seed(1))
    _, caches = mb.decode_ms(model, prompt, 4, cached=True)
    assert [c.offset for c in caches] == [16] * QUICK.layers  # the prompt and the 4 new tokens
    assert sum(c.nbytes for c in caches) == 16 * kv_cache_bytes_per_token(QUICK.layers, 2, QUICK.head_dim,
                                                                          bytes_per_element=4)
    _, none = mb.decode_ms(model, prompt, 4, cached=False)
    assert none is None


def test_the_hand_written_decoder_gives_the_logits_of_the_library() -> None:
    torch.manual_seed(0)
    model = mb.Decoder(QUICK, 2).eval()
    assert mb.check_decoding(mb.PlainDecoder(model, 32), QUICK, 32, full_pass=model) < 1e-4


def test_a_wrong_cache_is_caught_by_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    model = mb.Decoder(QUICK, 2).eval()
    original = mb.KVCache._append  # what the layer calls once it has checked the cache at its door

    def forgetful(self, layer, keys, values, window, sink, positions=None):  # loses the oldest key and value
        keys, values, positions = original(self, layer, keys, values, window, sink, positions)
        return keys[:, :, 1:], values[:, :, 1:], None if positions is None else positions[1:]

    monkeypatch.setattr(mb.KVCache, "_append", forgetful)
    with pytest.raises(AssertionError):
        mb.check_decoding(model, QUICK, 24)


def test_the_quick_decoding_run_prints_and_writes_its_table(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    csv_path, json_path = tmp_path / "decode.csv", tmp_path / "decode.json"
    assert mb.main(["--quick", "--decode-only", "--repeats", "1", "--decode-csv", str(csv_path),
                    "--decode-json", str(json_path)]) == 0
    printed = capsys.readouterr().out
    assert "greedy decoding" in printed and "cache KiB/token" in printed and "hand-written" in printed
    one_token = json.loads(json_path.read_text())["one_token"]  # one layer, one token: the layer and by hand
    assert [r["cached_tokens"] for r in one_token] == list(QUICK.tokens)
    assert all(r["layer_best_us"] > 0 and r["by_hand_best_us"] > 0 for r in one_token)
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    variants = [name for name, _ in QUICK.variants]
    assert [(int(r["tokens"]), r["variant"], r["path"]) for r in rows] == [
        (t, v, p) for t in QUICK.tokens for v in variants for p in mb.DECODE_PATHS]
    for r in rows:
        assert float(r["cache_kib_per_token"]) == float(r["formula_kib_per_token"]) > 0
        assert float(r["best_tokens_per_s"]) >= float(r["tokens_per_s"]) > 0
    kib = {r["variant"]: float(r["cache_kib_per_token"]) for r in rows}
    assert kib["MHA"] == 2 * kib["GQA"] == 4 * kib["MQA"]
    data = json.loads(json_path.read_text())
    assert data["config"]["new_tokens"] == QUICK.new_tokens and {"cpu", "torch", "date"} <= data["machine"].keys()


def test_the_default_run_includes_decoding_and_no_decode_skips_it(capsys: pytest.CaptureFixture) -> None:
    assert mb.main(["--quick", "--repeats", "1", "--no-decode"]) == 0
    assert "greedy decoding" not in capsys.readouterr().out
    assert mb.DecodeConfig().tokens == (128, 512, 2048)


# decode_cpu: the run notebook 11 quotes (before the hand-written baseline existed); decode_hand_cpu: the run with
# the hand-written cached decoder as a third path and the one-token cost of one layer.
RECORDED = [("decode_cpu.json", ("uncached", "cached")), ("decode_hand_cpu.json", mb.DECODE_PATHS)]


@pytest.mark.parametrize(("name", "paths"), RECORDED)
def test_the_recorded_decoding_run_covers_the_issue(name: str, paths: tuple[str, ...]) -> None:
    data = json.loads((ROOT / "benchmarks" / "results" / name).read_text())
    rows = data["rows"]
    config = mb.DecodeConfig(**{k: tuple(map(tuple, v)) if k == "variants" else (tuple(v) if k == "tokens" else v)
                                for k, v in data["config"].items()})
    assert config.tokens == (128, 512, 2048) and [v for v, _ in config.variants] == ["MHA", "GQA", "MQA"]
    assert {(r["tokens"], r["variant"], r["path"]) for r in rows} == {
        (t, v, p) for t in config.tokens for v, _ in config.variants for p in paths}
    for r in rows:  # the cache sizes hold on any machine
        formula = kv_cache_bytes_per_token(config.layers, r["kv_heads"], config.head_dim, bytes_per_element=4) / 1024
        assert r["cache_kib_per_token"] == r["formula_kib_per_token"] == round(formula, 3)


def _readme_section(title: str) -> str:
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    return readme.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def _recorded(name: str) -> dict:
    with open(ROOT / "benchmarks" / "results" / name) as f:
        return {(int(r["tokens"]), r["variant"], r["path"]): r for r in csv.DictReader(f)}


def test_the_readme_table_is_the_recorded_run() -> None:
    """benchmarks/README.md quotes results/decode_cpu.csv: tokens/s, the ratio and the cache size per token."""
    rows = _recorded("decode_cpu.csv")
    section = _readme_section("Decoding with a KV cache")
    quoted = [line for line in section.splitlines() if line.startswith("| ") and "KiB |" in line]
    assert len(quoted) == 9
    for line in quoted:
        t, variant, kv_heads, uncached, cached, ratio, kib = [cell.strip() for cell in line.strip("|").split("|")]
        slow, fast = rows[(int(t), variant, "uncached")], rows[(int(t), variant, "cached")]
        assert int(kv_heads) == int(fast["kv_heads"])
        assert float(uncached) == float(slow["tokens_per_s"]) and float(cached) == float(fast["tokens_per_s"])
        assert ratio == f"{float(slow['median_ms']) / float(fast['median_ms']):.1f}x", line
        assert kib == f"{float(fast['cache_kib_per_token']):g} KiB"


def test_the_readme_gpu_table_is_the_recorded_run() -> None:
    """The GPU section quotes results/decode_cuda.csv: tokens/s of each path, their ratio, the cache per token."""
    rows = _recorded("decode_cuda.csv")
    section = _readme_section("On a GPU")
    quoted = [line for line in section.splitlines() if line.startswith("| ") and "KiB |" in line]
    assert len(quoted) == 9
    for line in quoted:
        t, variant, kv_heads, uncached, cached, ratio, hand, kib = [c.strip() for c in line.strip("|").split("|")]
        slow, fast, by_hand = (rows[(int(t), variant, path)] for path in ("uncached", "cached", "hand-written"))
        assert int(kv_heads) == int(fast["kv_heads"])
        assert (float(uncached), float(cached), float(hand)) == tuple(
            round(float(r["tokens_per_s"]), 1) for r in (slow, fast, by_hand)), line
        assert ratio == f"{float(fast['tokens_per_s']) / float(slow['tokens_per_s']):.2f}x", line
        assert kib == f"{float(fast['cache_kib_per_token']):g} KiB"
