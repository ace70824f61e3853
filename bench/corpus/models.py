"""The corpus's architectures: tiny random-init models, seeded, in eval mode, each with
deterministic example inputs, exported once with torch's default (dynamo) ONNX exporter
and cached under ``bench/corpus/.cache/`` (git-ignored), or under ``PERPENDIS_CORPUS_CACHE``
when set: scripts/torch_matrix.sh gives each torch release a cache of its own, since a cached
graph is reused whichever torch made it.

One builder per architecture returns ``(module, inputs)``; the module returns a single
tensor (the architecture's main output), so every ONNX graph has one output and every
case compares one array.  :func:`export` writes (or reuses) the ONNX file; :func:`run_ort`
runs it in ONNX Runtime CPU.  Nothing runs at import: a bisect harness imports this and
calls :func:`clean` or :func:`bench.corpus.cases.mutant` for the pieces it needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

BASE_CACHE = Path(os.environ.get("PERPENDIS_CORPUS_CACHE") or Path(__file__).resolve().parent / ".cache")
CACHE = BASE_CACHE
SEED = 0
BATCH = 2
SEQ = 8
VOCAB = 96
# Weights' init std: the configs' default 0.02 keeps a 32-wide layer's activations near 0.1,
# where GELU's tanh form equals erf's to rounding; 0.2 gives activations of order 1, as in
# a trained network, so an activation or epsilon change shows.
INIT = 0.2


def use_seed(seed: int) -> Path:
    """Make every later build, input and mutation draw from ``seed`` and cache under its
    own folder (``.cache/seed<N>/``; seed 0 is the original corpus in ``.cache/``).

    A second seed gives a corpus of new cases (other weights, inputs, mutation targets,
    perturbed slices) that no threshold was tuned on: a fresh held-back set."""
    global SEED, CACHE
    SEED = int(seed)
    CACHE = BASE_CACHE if SEED == 0 else BASE_CACHE / f"seed{SEED}"
    return CACHE


def variant_seed(*parts: str) -> int:
    """A 64-bit seed from ``parts`` and, when not 0, the corpus seed: seed 0 draws exactly
    what the corpus drew before seeds existed, so its cache stays valid."""
    import hashlib

    key = "/".join(parts) if SEED == 0 else "/".join((*parts, f"seed{SEED}"))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")


def _seeded() -> None:
    import torch

    torch.manual_seed(SEED)


class _Main:
    """Wraps a transformers model so it returns one tensor (``field`` of its output)."""

    @staticmethod
    def wrap(model, field: str):
        import torch

        class Main(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, x):
                return getattr(self.model(x), field)

        return Main().eval()


def _tokens(n_batch: int = BATCH) -> np.ndarray:
    return np.random.default_rng(SEED).integers(1, VOCAB, size=(n_batch, SEQ)).astype(np.int64)


def _image(n_batch: int = BATCH, channels: int = 3, size: int = 32) -> np.ndarray:
    return np.random.default_rng(SEED).standard_normal((n_batch, channels, size, size)).astype(np.float32)


def bert(n_batch: int = BATCH):
    """BERT encoder: token ids in, last hidden state out."""
    from transformers import BertConfig, BertModel

    _seeded()
    cfg = BertConfig(
        initializer_range=INIT,
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    return _Main.wrap(BertModel(cfg, add_pooling_layer=False).eval(), "last_hidden_state"), (_tokens(n_batch),)


def gpt2(n_batch: int = BATCH):
    """GPT-2 language model: token ids in, logits out."""
    from transformers import GPT2Config, GPT2LMHeadModel

    _seeded()
    cfg = GPT2Config(initializer_range=INIT, vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=32)
    return _Main.wrap(GPT2LMHeadModel(cfg).eval(), "logits"), (_tokens(n_batch),)


def llama(n_batch: int = BATCH):
    """Llama causal LM (RMSNorm, rotary, SiLU gate): token ids in, logits out."""
    from transformers import LlamaConfig, LlamaForCausalLM

    _seeded()
    cfg = LlamaConfig(
        initializer_range=INIT,
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    return _Main.wrap(LlamaForCausalLM(cfg).eval(), "logits"), (_tokens(n_batch),)


def convnext(n_batch: int = BATCH):
    """ConvNeXt image classifier (depthwise Conv, channels-last LayerNorm, GELU, layer scale).

    Stands in for T5: T5's encoder does not export with torch 2.13's dynamo exporter (its
    attention reshapes a transposed view, which the decomposition step refuses)."""
    from transformers import ConvNextConfig, ConvNextForImageClassification

    _seeded()
    cfg = ConvNextConfig(
        initializer_range=INIT,
        num_channels=3,
        patch_size=4,
        num_stages=2,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        num_labels=10,
        image_size=32,
        layer_scale_init_value=0.5,
    )
    return _Main.wrap(ConvNextForImageClassification(cfg).eval(), "logits"), (_image(n_batch),)


def vit(n_batch: int = BATCH):
    """ViT image classifier: a 32x32 RGB image in, class logits out."""
    from transformers import ViTConfig, ViTForImageClassification

    _seeded()
    cfg = ViTConfig(
        initializer_range=INIT,
        image_size=32,
        patch_size=8,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=10,
    )
    return _Main.wrap(ViTForImageClassification(cfg).eval(), "logits"), (_image(n_batch),)


def whisper(n_batch: int = BATCH):
    """Whisper encoder (Conv1d front end, GELU, LayerNorm): log-mel frames in, hidden state out."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    _seeded()
    cfg = WhisperConfig(
        init_std=INIT,
        vocab_size=VOCAB,
        num_mel_bins=16,
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_layers=1,
        decoder_attention_heads=2,
        decoder_ffn_dim=64,
        max_source_positions=16,
        max_target_positions=16,
    )
    x = np.random.default_rng(SEED).standard_normal((n_batch, 16, 32)).astype(np.float32)
    return _Main.wrap(WhisperEncoder(cfg).eval(), "last_hidden_state"), (x,)


def resnet(n_batch: int = BATCH):
    """ResNet (transformers ResNetConfig: Conv, BatchNorm, ReLU, MaxPool): pooled features per channel map."""
    from transformers import ResNetConfig, ResNetForImageClassification

    _seeded()
    cfg = ResNetConfig(
        num_channels=3, embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic", num_labels=10
    )
    model = ResNetForImageClassification(cfg).eval()
    _randomise_batchnorm(model)
    return _Main.wrap(model, "logits"), (_image(n_batch),)


def _randomise_batchnorm(model) -> None:
    """Fresh BatchNorm statistics are 0 and 1 (an identity): give them real values so a
    mutation of them changes something, as in a trained network."""
    import torch

    g = torch.Generator().manual_seed(SEED)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
            m.running_var.copy_(0.5 + torch.rand(n, generator=g))
            m.weight.data.copy_(1 + 0.1 * torch.randn(n, generator=g))
            m.bias.data.copy_(0.1 * torch.randn(n, generator=g))


def transformer_encoder(n_batch: int = BATCH):
    """``torch.nn.TransformerEncoder`` (2 post-norm layers, GELU) over float features."""
    import torch

    _seeded()
    layer = torch.nn.TransformerEncoderLayer(
        d_model=32, nhead=2, dim_feedforward=64, activation="gelu", batch_first=True
    )

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

        def forward(self, x):
            return self.encoder(x)

    x = np.random.default_rng(SEED).standard_normal((n_batch, SEQ, 32)).astype(np.float32)
    return Encoder().eval(), (x,)


def t5(n_batch: int = BATCH):
    """T5's encoder: torch 2.13's dynamo exporter refuses it (its attention reshapes a
    transposed view), the case of an export that fails (:data:`FAILS_TO_EXPORT`)."""
    from transformers import T5Config, T5EncoderModel

    _seeded()
    cfg = T5Config(vocab_size=VOCAB, d_model=32, d_kv=16, num_heads=2, d_ff=64, num_layers=2)
    return _Main.wrap(T5EncoderModel(cfg).eval(), "last_hidden_state"), (_tokens(n_batch),)


ARCHITECTURES: dict[str, Callable] = {
    "bert": bert,
    "gpt2": gpt2,
    "llama": llama,
    "convnext": convnext,
    "vit": vit,
    "whisper": whisper,
    "resnet": resnet,
    "transformer_encoder": transformer_encoder,
}
INPUT_NAMES = {
    "bert": "ids",
    "gpt2": "ids",
    "llama": "ids",
    "convnext": "pixels",
    "vit": "pixels",
    "whisper": "frames",
    "resnet": "pixels",
    "transformer_encoder": "x",
}
# Architectures torch's dynamo exporter cannot export: built like the others, never exported here.
FAILS_TO_EXPORT: dict[str, Callable] = {"t5": t5}


def build(arch: str, n_batch: int = BATCH):
    """``(module, inputs)`` of one architecture: the module in eval mode, its parameters
    made trained-like (:func:`_trained_like`), inputs as NumPy."""
    builders = {**ARCHITECTURES, **FAILS_TO_EXPORT}
    if arch not in builders:
        raise KeyError(f"unknown architecture {arch!r}; known: {', '.join(builders)}")
    module, inputs = builders[arch](n_batch)
    _trained_like(module)
    return module, inputs


def _trained_like(module) -> None:
    """Give biases and norm weights the spread a trained network has.

    Random init leaves every bias 0 and every norm weight 1: the exporter then shares one
    initializer between dozens of nodes, and dropping, scaling or zeroing a bias changes
    nothing.  Seeded, so every build of an architecture is the same network."""
    import torch

    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for _name, p in module.named_parameters():
            if p.ndim != 1:
                continue
            base = 1.0 if bool((p == 1).all()) else 0.0
            p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))


def torch_run(module, inputs, dtype=None) -> np.ndarray:
    """The module's output on ``inputs`` as a float32 (or ``dtype``) NumPy array, no grad."""
    import torch

    with torch.no_grad():
        out = module(*[torch.from_numpy(x) for x in inputs])
    return out.detach().float().numpy() if dtype is None else out.detach().to(dtype).numpy()


def onnx_path(arch: str) -> Path:
    return CACHE / "onnx" / f"{arch}.onnx"


def export(arch: str, path: Path | None = None) -> Path:
    """The architecture exported by ``torch.onnx.export(..., dynamo=True)``, cached: the file
    is reused when present, so the corpus's graphs stay fixed across runs.  The batch axis is
    dynamic, so batch-size pairs reuse the one graph."""
    import torch

    path = path or onnx_path(arch)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    module, inputs = build(arch)
    args = tuple(torch.from_numpy(x) for x in inputs)
    name = INPUT_NAMES[arch]
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.onnx.export(
        module,
        args,
        dynamo=True,
        input_names=[name],
        output_names=["out"],
        dynamic_shapes=({0: batch},),
        optimize=True,
        verbose=False,
    )
    tmp = path.with_suffix(".tmp.onnx")
    program.save(str(tmp), external_data=False)
    tmp.replace(path)
    return path


def session(model_or_path, *, opt_level: str = "all", threads: int = 1):
    """An ONNX Runtime CPU session; ``opt_level`` is one of disable/basic/extended/all."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt_level]
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    source = model_or_path if isinstance(model_or_path, (str, Path)) else model_or_path.SerializeToString()
    return ort.InferenceSession(
        str(source) if isinstance(source, Path) else source, so, providers=["CPUExecutionProvider"]
    )


def run_ort(model_or_path, inputs, **options) -> np.ndarray:
    """The graph's single output on ``inputs`` in ONNX Runtime CPU."""
    sess = session(model_or_path, **options)
    feed = {i.name: x for i, x in zip(sess.get_inputs(), inputs, strict=False)}
    return sess.run(None, feed)[0]


def clean(arch: str):
    """What a bisect harness needs of a clean architecture: ``(onnx path, module, inputs)``."""
    module, inputs = build(arch)
    return export(arch), module, inputs
