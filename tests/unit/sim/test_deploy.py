"""The deployment roofline, against numbers worked out by hand from the documented constants."""

from __future__ import annotations

import math

import pytest

from llm_locust.sim.deploy import GIB, GPUS, MIB, MODELS, Deployment, DeploymentError, model_key


def _d(gpu: str = "h100", model: str = "70b", tp: int = 4, **kw: object) -> Deployment:
    return Deployment(GPUS[gpu], MODELS[model], tp, **kw)  # type: ignore[arg-type]


def test_70b_on_four_h100_by_hand() -> None:
    d = _d()
    weights = 70.6e9 * 2 / 4  # bf16, split 4 ways
    kv_per_token = 2 * 80 * (8 // 4) * 128 * 2  # K and V, 80 layers, 2 of 8 KV heads, bf16
    assert d.weights_per_gpu == pytest.approx(weights)
    assert d.kv_bytes_per_token == kv_per_token == 81_920
    free = 81_559 * MIB * 0.9 - weights - 3 * GIB
    assert d.kv_tokens == int(free // kv_per_token)
    eff = 0.9**2  # TP4 = two doublings
    cfg = d.engine_config()
    assert cfg.decode_base == pytest.approx(weights / (3.35e12 * 0.8 * eff))
    assert cfg.decode_per_ctx_token == pytest.approx(kv_per_token / (3.35e12 * 0.8 * eff))
    assert cfg.compute_per_token == pytest.approx(2 * 70.6e9 / 4 / (989e12 * 0.5 * eff))
    # H100 has >= 70 GiB and is not an A100: vLLM's large-GPU defaults
    assert (cfg.max_num_seqs, cfg.max_num_batched_tokens) == (1024, 8192)
    assert cfg.prefix_caching and cfg.block_size == 16


def test_more_tensor_parallelism_means_more_kv_and_faster_steps() -> None:
    tp4, tp8 = _d(tp=4), _d(tp=8)
    assert tp8.kv_tokens > 2.5 * tp4.kv_tokens  # half the weights per GPU leaves far more room
    n4, n8 = tp4.numbers(), tp8.numbers()
    assert n8["decode_ms_batch_1"] < n4["decode_ms_batch_1"]
    ratio = n4["decode_ms_batch_1"] / n8["decode_ms_batch_1"]
    assert ratio == pytest.approx(2 * 0.9, rel=0.02)  # twice the bandwidth at 0.9 efficiency


def test_kv_heads_are_replicated_beyond_their_count() -> None:
    assert _d(tp=8).kv_bytes_per_token == 2 * 80 * 1 * 128 * 2
    assert _d(model="405b", tp=16).kv_bytes_per_token == 2 * 126 * 1 * 128 * 2  # 8 heads, 16 ranks


def test_a100_gets_the_small_defaults_and_fp8_halves_the_weights() -> None:
    d = _d(gpu="a100")
    assert d.batch_limits == (256, 2048)
    assert _d(dtype="fp8").weights_per_gpu == pytest.approx(_d().weights_per_gpu / 2)
    assert _d(max_num_seqs=32, max_num_batched_tokens=4096).batch_limits == (32, 4096)


def test_a_model_that_does_not_fit_is_refused_naming_the_flag() -> None:
    with pytest.raises(DeploymentError, match="no KV cache") as e:
        _d(tp=1).check(32768)
    assert e.value.flag == "--gpus"
    with pytest.raises(DeploymentError, match="fewer than --max-model-len") as e:
        _d(gpu="l4", model="8b", tp=1).check(32768)
    assert e.value.flag == "--max-model-len"
    _d(gpu="l4", model="8b", tp=1).check(8192)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("70b", "70b"),
        ("llm-locust/sim-8b", "8b"),
        ("meta-llama/Llama-3.1-70B-Instruct", "70b"),
        ("Qwen2.5-32B", "32b"),
        ("llama-3.1-405b-fp8", "405b"),
    ],
)
def test_model_key_from_the_served_name(name: str, key: str) -> None:
    assert model_key(name) == key


@pytest.mark.parametrize("name", ["gpt-4o", "mistral-7b", "x-1.5b"])
def test_unknown_model_size_is_an_error(name: str) -> None:
    with pytest.raises(DeploymentError) as e:
        model_key(name)
    assert e.value.flag == "--model"


def test_explain_states_every_derived_number() -> None:
    d = _d()
    text = "\n".join(d.explain())
    n = d.numbers()
    assert "rehearsal model, not a prediction" in text
    for value in (f"{n['kv_tokens']:,} tokens", f"{n['decode_ms_batch_1']:.1f} ms at batch 1"):
        assert value in text
    assert f"{n['prefill_tokens_per_s']:,.0f} tokens/s" in text
    # max batch: the KV cache limits it before max_num_seqs does (chat-sized sequences)
    assert n["max_batch"] == min(1024, d.kv_tokens // (1150 + 213))
    assert n["prefill_tokens_per_s"] == pytest.approx(8192 / (8192 * d.engine_config().compute_per_token))
    assert math.isfinite(n["decode_ms_max_batch"]) and n["decode_ms_max_batch"] > n["decode_ms_batch_1"]
