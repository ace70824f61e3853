"""Small, seeded instances of stock architectures, each with an input, for exporting and bisecting.

Random-init transformers configs (nothing is downloaded), a CNN and ``nn.TransformerEncoder``,
kept tiny so that an export and both runs take a few seconds on one core.  Each builder
returns ``(model in eval mode, input tensors)``; the model returns one tensor, so that the
exporter's graph has one output and the PyTorch side needs no unwrapping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn


class _Hidden(nn.Module):
    """A transformers model's last hidden state (or logits) as the one output."""

    def __init__(self, model: nn.Module, key: str, **fixed: Any) -> None:
        super().__init__()
        self.model, self.key, self.fixed = model, key, fixed

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(*args, **self.fixed), self.key)


def _tokens(vocab: int = 100, length: int = 8) -> torch.Tensor:
    return torch.randint(0, vocab, (1, length), generator=torch.Generator().manual_seed(1))


def gpt2() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=16, bos_token_id=0, eos_token_id=0)
    return _Hidden(GPT2Model(config), "last_hidden_state", use_cache=False), (_tokens(),)


def bert() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64, vocab_size=100,
        max_position_embeddings=16,
    )
    return _Hidden(BertModel(config, add_pooling_layer=False), "last_hidden_state"), (_tokens(),)


def llama() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
        vocab_size=100, max_position_embeddings=16,
    )
    return _Hidden(LlamaModel(config), "last_hidden_state", use_cache=False), (_tokens(),)


def t5() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """torch 2.13's dynamo exporter fails on it (a view of a transposed attention output): the failure case."""
    from transformers import T5Config, T5EncoderModel

    config = T5Config(num_layers=2, d_model=32, d_kv=16, num_heads=2, d_ff=64, vocab_size=100)
    return _Hidden(T5EncoderModel(config), "last_hidden_state"), (_tokens(),)


def distilbert() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import DistilBertConfig, DistilBertModel

    config = DistilBertConfig(n_layers=2, dim=32, n_heads=2, hidden_dim=64, vocab_size=100, max_position_embeddings=16)
    return _Hidden(DistilBertModel(config), "last_hidden_state"), (_tokens(),)


def vit() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64, image_size=16, patch_size=4,
    )
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    return _Hidden(ViTModel(config, add_pooling_layer=False), "last_hidden_state"), (x,)


def whisper() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = WhisperConfig(
        encoder_layers=2, d_model=32, encoder_attention_heads=2, encoder_ffn_dim=64, num_mel_bins=8,
        max_source_positions=8,
    )
    x = torch.randn(1, 8, 16, generator=torch.Generator().manual_seed(1))
    return _Hidden(WhisperEncoder(config), "last_hidden_state"), (x,)


def cnn() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Dropout(0.1),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Identity(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
    )
    model.train()
    with torch.no_grad():  # batch-norm statistics of their own, so that folding them is not a no-op
        model(torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(2)))
    return model, (torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1)),)


class _Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def transformer_encoder() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return _Encoder(), (torch.randn(1, 8, 32, generator=torch.Generator().manual_seed(1)),)


ARCHITECTURES: dict[str, Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]] = {
    "gpt2": gpt2, "bert": bert, "llama": llama, "distilbert": distilbert, "vit": vit, "whisper": whisper, "cnn": cnn,
    "transformer_encoder": transformer_encoder,
}
FAILS_TO_EXPORT = {"t5": t5}


def build(name: str) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The seeded model (eval mode) and its input."""
    torch.manual_seed(0)
    model, args = {**ARCHITECTURES, **FAILS_TO_EXPORT}[name]()
    return model.eval(), args


def export(model: nn.Module, args: tuple[torch.Tensor, ...], path: Any) -> None:
    """torch.onnx's default (dynamo) exporter, quietly: its progress lines go to stdout."""
    import contextlib
    import io
    import warnings

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, str(path), dynamo=True, external_data=False)
