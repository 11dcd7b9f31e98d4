"""Deployments: engine parameters from GPUs, tensor parallelism and a model, by a roofline.

``llm-locust sim --gpus 4 --tp 4 --gpu h100 --model 70b`` plays "a 70B-class model on one
4-GPU TP4 instance" so a capacity plan can be rehearsed without the GPUs. This is a
**rehearsal model, not a prediction**: a first-order roofline with the constants below,
good for the shape of the answer (where the knee is, how plans compare), not for the last
20 % of a number. Calibrate ``--mbu``, ``--mfu`` and ``--tp-efficiency`` against one real
measurement before trusting absolute values.

Per GPU of one instance (tensor parallel degree ``tp``; weights and KV heads are split
``tp`` ways, a KV head is replicated when ``tp`` exceeds the KV heads):

- weights = params x dtype bytes / tp;
- KV bytes per token = 2 (K and V) x layers x ceil(kv_heads / tp) x head_dim x 2 (bf16 KV);
- KV cache = memory x ``gpu_memory_utilization`` - weights - reserve (activations, CUDA
  graphs, NCCL buffers: a fixed ``reserve_gib``), in tokens = KV cache / KV bytes per token;
- effective bandwidth = bandwidth x MBU x E(tp), effective compute = FLOPs x MFU x E(tp),
  with the tensor-parallel efficiency E(tp) = ``tp_efficiency`` ** log2(tp) (the all-reduces
  of every layer cost time a single GPU does not spend);
- a decode step reads the weights once and the KV of every token in the batch's context:
  memory time = (weights + KV bytes per token x context) / effective bandwidth;
- every token a step processes (one per decoding sequence, plus the prefill chunk) costs
  2 x params FLOPs / tp: compute time = 2 x params x tokens / tp / effective compute;
- a step takes the slower of the two (:class:`~llm_locust.sim.engine.EngineConfig`), so a
  small batch is bandwidth-bound and a big prefill chunk compute-bound, as on a real GPU.

Batch limits are vLLM's defaults (``EngineArgs.get_batch_defaults`` in
``vllm/engine/arg_utils.py``, API server): ``max_num_seqs`` 1024 and
``max_num_batched_tokens`` 8192 on GPUs with at least 70 GiB that are not A100s, else 256
and 2048. ``--max-num-seqs`` and ``--max-num-batched-tokens`` override them.

Not modelled: CPU scheduling overhead, attention FLOPs beyond 2 x params per token, KV
quantisation, pipeline and expert parallelism, preemption (KV is reserved on admission).

GPUs (memory as the driver reports it; bandwidth and dense BF16 tensor FLOPs, without
sparsity, from the vendor's datasheet):

=========== ===================== ============ ============ ============= ==================================
key         GPU                   memory       bandwidth    BF16 dense    source
=========== ===================== ============ ============ ============= ==================================
h100        H100 SXM5 80GB        81,559 MiB   3.35 TB/s    989 TFLOP/s   NVIDIA H100 datasheet
h200        H200 SXM 141GB        143,771 MiB  4.8 TB/s     989 TFLOP/s   NVIDIA H200 datasheet
a100        A100 SXM4 80GB        81,920 MiB   2.039 TB/s   312 TFLOP/s   NVIDIA A100 datasheet
a100-40gb   A100 SXM4 40GB        40,960 MiB   1.555 TB/s   312 TFLOP/s   NVIDIA A100 datasheet
l40s        L40S 48GB             46,068 MiB   864 GB/s     362 TFLOP/s   NVIDIA L40S datasheet
l4          L4 24GB               23,034 MiB   300 GB/s     121 TFLOP/s   NVIDIA L4 datasheet
mi300x      Instinct MI300X 192GB 196,608 MiB  5.3 TB/s     1,307 TFLOP/s AMD Instinct MI300X data sheet
=========== ===================== ============ ============ ============= ==================================

Models (dense decoder-only; shapes from each model's ``config.json`` on Hugging Face,
parameter counts from its model card):

=====  ====================  ========  ======  ========  ========  ====================================
key    model                 params    layers  KV heads  head dim  source
=====  ====================  ========  ======  ========  ========  ====================================
8b     Llama-3.1-8B          8.03 B    32      8         128       meta-llama/Llama-3.1-8B
32b    Qwen2.5-32B           32.5 B    64      8         128       Qwen/Qwen2.5-32B
70b    Llama-3.1-70B         70.6 B    80      8         128       meta-llama/Llama-3.1-70B
405b   Llama-3.1-405B        405.9 B   126     8         128       meta-llama/Llama-3.1-405B
=====  ====================  ========  ======  ========  ========  ====================================

Weights ``--dtype bf16`` (2 bytes per parameter, default) or ``fp8`` (1 byte); the KV cache is
bf16. Assumed constants (not measured; change them with the flags of the same name):
MBU 0.8 (achievable share of peak memory bandwidth; the term is the Databricks/MosaicML
"LLM Inference Performance Engineering: Best Practices" post's), MFU 0.5 (share of peak
FLOPs reached by prefill GEMMs), ``tp_efficiency`` 0.9 per doubling of TP,
``gpu_memory_utilization`` 0.9 (vLLM's default), reserve 3 GiB per GPU, block size 16
(vLLM's default).

Pure module: no network.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from llm_locust.sim.engine import EngineConfig

__all__ = [
    "GPUS",
    "MODELS",
    "Assumptions",
    "Deployment",
    "DeploymentError",
    "Gpu",
    "Model",
    "model_key",
]

GIB = 2**30
MIB = 2**20
DTYPE_BYTES = {"bf16": 2, "fp8": 1}
KV_BYTES = 2  # bf16 KV cache

#: A chat-sized sequence for ``--explain`` (the chat profile's mean prompt and output).
REF_PROMPT, REF_OUTPUT = 1150, 213


class DeploymentError(ValueError):
    """A deployment that cannot be built; ``flag`` names the option to blame."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True)
class Gpu:
    key: str
    name: str
    memory: float  # bytes, as the driver reports
    bandwidth: float  # bytes/s
    flops: float  # dense BF16 FLOP/s

    @property
    def large(self) -> bool:
        """vLLM's "large GPU" defaults: at least 70 GiB and not an A100."""
        return self.memory >= 70 * GIB and not self.key.startswith("a100")


@dataclass(frozen=True)
class Model:
    key: str
    name: str
    params: float
    layers: int
    kv_heads: int
    head_dim: int


GPUS: dict[str, Gpu] = {
    g.key: g
    for g in (
        Gpu("h100", "H100 SXM5 80GB", 81_559 * MIB, 3.35e12, 989e12),
        Gpu("h200", "H200 SXM 141GB", 143_771 * MIB, 4.8e12, 989e12),
        Gpu("a100", "A100 SXM4 80GB", 81_920 * MIB, 2.039e12, 312e12),
        Gpu("a100-40gb", "A100 SXM4 40GB", 40_960 * MIB, 1.555e12, 312e12),
        Gpu("l40s", "L40S 48GB", 46_068 * MIB, 864e9, 362e12),
        Gpu("l4", "L4 24GB", 23_034 * MIB, 300e9, 121e12),
        Gpu("mi300x", "Instinct MI300X 192GB", 196_608 * MIB, 5.3e12, 1307e12),
    )
}

MODELS: dict[str, Model] = {
    m.key: m
    for m in (
        Model("8b", "Llama-3.1-8B", 8.03e9, 32, 8, 128),
        Model("32b", "Qwen2.5-32B", 32.5e9, 64, 8, 128),
        Model("70b", "Llama-3.1-70B", 70.6e9, 80, 8, 128),
        Model("405b", "Llama-3.1-405B", 405.9e9, 126, 8, 128),
    )
}

_SIZE = re.compile(r"(?<![\d.])(\d+)b(?![a-z0-9])", re.IGNORECASE)


def model_key(name: str) -> str:
    """The catalog key a served model name means: the last ``<N>b`` in it (``...-70B-...``)."""
    sizes = [m.lower() + "b" for m in _SIZE.findall(name)]
    if not sizes:
        raise DeploymentError(
            "--model",
            f"cannot tell the model size from {name!r}; use one of {', '.join(MODELS)} "
            "or a name that contains it (e.g. meta-llama/Llama-3.1-70B-Instruct)",
        )
    if sizes[-1] not in MODELS:
        raise DeploymentError(
            "--model", f"no {sizes[-1]} model in the catalog ({', '.join(MODELS)}): {name!r}"
        )
    size: str = sizes[-1]
    return size


@dataclass(frozen=True)
class Assumptions:
    mbu: float = 0.8
    mfu: float = 0.5
    tp_efficiency: float = 0.9
    gpu_memory_utilization: float = 0.9
    reserve_gib: float = 3.0
    block_size: int = 16


@dataclass(frozen=True)
class Deployment:
    """One instance's hardware and model; ``replicas`` identical instances."""

    gpu: Gpu
    model: Model
    tp: int
    dtype: str = "bf16"
    replicas: int = 1
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    assumptions: Assumptions = field(default_factory=Assumptions)

    # -- memory --------------------------------------------------------------------

    @property
    def weights_per_gpu(self) -> float:
        return self.model.params * DTYPE_BYTES[self.dtype] / self.tp

    @property
    def kv_bytes_per_token(self) -> float:
        """Per GPU."""
        m = self.model
        return 2 * m.layers * math.ceil(m.kv_heads / self.tp) * m.head_dim * KV_BYTES

    @property
    def usable_per_gpu(self) -> float:
        return self.gpu.memory * self.assumptions.gpu_memory_utilization

    @property
    def kv_cache_per_gpu(self) -> float:
        return self.usable_per_gpu - self.weights_per_gpu - self.assumptions.reserve_gib * GIB

    @property
    def kv_tokens(self) -> int:
        return max(0, int(self.kv_cache_per_gpu // self.kv_bytes_per_token))

    # -- speed ---------------------------------------------------------------------

    @property
    def tp_factor(self) -> float:
        factor: float = self.assumptions.tp_efficiency ** math.log2(self.tp)
        return factor

    @property
    def bandwidth(self) -> float:
        """Effective bytes/s per GPU."""
        return self.gpu.bandwidth * self.assumptions.mbu * self.tp_factor

    @property
    def compute(self) -> float:
        """Effective FLOP/s per GPU."""
        return self.gpu.flops * self.assumptions.mfu * self.tp_factor

    @property
    def batch_limits(self) -> tuple[int, int]:
        """(max_num_seqs, max_num_batched_tokens), vLLM's defaults unless overridden."""
        seqs, tokens = (1024, 8192) if self.gpu.large else (256, 2048)
        return self.max_num_seqs or seqs, self.max_num_batched_tokens or tokens

    def engine_config(self, prefix_caching: bool = True) -> EngineConfig:
        """The engine parameters this deployment means (seconds, before any time scale)."""
        seqs, tokens = self.batch_limits
        return EngineConfig(
            max_num_seqs=seqs,
            kv_cache_tokens=self.kv_tokens,
            prefill_per_token=0.0,
            decode_base=self.weights_per_gpu / self.bandwidth,
            decode_per_seq=0.0,
            decode_per_ctx_token=self.kv_bytes_per_token / self.bandwidth,
            compute_per_token=2 * self.model.params / self.tp / self.compute,
            max_num_batched_tokens=tokens,
            block_size=self.assumptions.block_size,
            prefix_caching=prefix_caching,
        )

    def check(self, max_model_len: int) -> None:
        """Raise :class:`DeploymentError` for a deployment vLLM would refuse to start."""
        if self.kv_cache_per_gpu <= 0:
            raise DeploymentError(
                "--gpus",
                f"{self.model.name} ({self.dtype}) needs {self.weights_per_gpu / GIB:.1f} GiB of weights "
                f"per GPU at TP{self.tp}, which leaves no KV cache in "
                f"{self.usable_per_gpu / GIB:.1f} GiB usable on a {self.gpu.name}; use more GPUs",
            )
        if self.kv_tokens < max_model_len:
            raise DeploymentError(
                "--max-model-len",
                f"the KV cache holds {self.kv_tokens} tokens, fewer than --max-model-len "
                f"{max_model_len} (vLLM would refuse to start); lower --max-model-len or add GPUs",
            )

    # -- explanation ---------------------------------------------------------------

    def numbers(self) -> dict[str, float]:
        """The derived numbers ``--explain`` prints."""
        cfg = self.engine_config()
        seqs, tokens = self.batch_limits
        ref = REF_PROMPT + REF_OUTPUT
        ctx = REF_PROMPT + REF_OUTPUT // 2
        batch = max(1, min(seqs, self.kv_tokens // ref))
        return {
            "kv_tokens": self.kv_tokens,
            "max_num_seqs": seqs,
            "max_num_batched_tokens": tokens,
            "max_batch": batch,
            "decode_ms_batch_1": 1e3 * cfg.step_duration(1, 0, ctx),
            "decode_ms_max_batch": 1e3 * cfg.step_duration(batch, 0, batch * ctx),
            "prefill_tokens_per_s": tokens / cfg.step_duration(0, tokens, 0),
        }

    def explain(self) -> list[str]:
        g, m, a = self.gpu, self.model, self.assumptions
        n = self.numbers()
        ref = REF_PROMPT + REF_OUTPUT
        return [
            "rehearsal model, not a prediction: a first-order roofline (constants and sources in "
            "llm_locust/sim/deploy.py)",
            f"deployment: {self.replicas} instance{'s' if self.replicas > 1 else ''} of {self.tp} x "
            f"{g.name} (TP{self.tp}), {m.name} class ({m.params / 1e9:.1f} B params, {self.dtype} weights)",
            f"per GPU: {self.usable_per_gpu / GIB:.1f} GiB usable ({a.gpu_memory_utilization:g} of "
            f"{g.memory / GIB:.1f}), weights {self.weights_per_gpu / GIB:.1f} GiB, reserve "
            f"{a.reserve_gib:g} GiB, KV cache {self.kv_cache_per_gpu / GIB:.1f} GiB "
            f"({self.kv_bytes_per_token / 1024:g} KiB per token)",
            f"KV cache: {n['kv_tokens']:,} tokens per instance (block {a.block_size})",
            f"max batch: {n['max_batch']:,} sequences (max_num_seqs {n['max_num_seqs']:,}; the KV "
            f"cache holds {self.kv_tokens // ref:,} chat-sized sequences of {ref:,} tokens)",
            f"decode step: {n['decode_ms_batch_1']:.1f} ms at batch 1, {n['decode_ms_max_batch']:.1f} ms "
            f"at batch {n['max_batch']:,} (context {REF_PROMPT + REF_OUTPUT // 2:,} tokens per sequence)",
            f"prefill: {n['prefill_tokens_per_s']:,.0f} tokens/s "
            f"(max_num_batched_tokens {n['max_num_batched_tokens']:,} per step)",
            f"efficiencies: MBU {a.mbu:g}, MFU {a.mfu:g}, TP efficiency {self.tp_factor:.3f} "
            f"({a.tp_efficiency:g} per doubling)",
        ]
