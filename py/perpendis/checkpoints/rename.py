"""Rename rules: how the tensor names of two checkpoints are brought to one naming before pairing.

A conversion renames (``model.layers.0.self_attn.q_proj.weight`` in Hugging Face,
``layers.0.attention.wq.weight`` elsewhere), so each side's names pass through the
same ordered list of regular-expression substitutions (``re.sub``, so ``\\1`` refers
to a group), and names that come out equal are paired.  A rule that leaves a name
unchanged costs nothing, so one list serves both sides.

Some namings are common enough to come built in (:data:`PRESETS`): ``gguf-llama`` brings
llama.cpp's GGUF names (``blk.0.attn_q.weight``) to Hugging Face's llama names
(``model.layers.0.self_attn.q_proj.weight``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import InputError


@dataclass(frozen=True)
class Rule:
    """One substitution: ``pattern`` (a regular expression) → ``replacement``."""

    pattern: str
    replacement: str

    def apply(self, name: str) -> str:
        return re.sub(self.pattern, self.replacement, name)


def parse_rule(text: str) -> Rule:
    """``PATTERN=REPLACEMENT`` (the first ``=`` splits them) as a checked rule."""
    pattern, sep, replacement = text.partition("=")
    if not sep or not pattern:
        raise InputError(f"a rename rule is PATTERN=REPLACEMENT, such as '^model\\.=', got {text!r}", where="rename")
    return checked(Rule(pattern, replacement))


def checked(rule: Rule) -> Rule:
    """``rule`` when its pattern compiles and its replacement only names groups it has."""
    try:
        compiled = re.compile(rule.pattern)
        compiled.sub(rule.replacement, "")
        for ref in re.findall(r"\\(\d+)|\\g<(\d+)>", rule.replacement):
            group = int(ref[0] or ref[1])
            if group > compiled.groups:
                raise re.error(f"invalid group reference {group}")
    except re.error as err:
        message = f"the rename rule {rule.pattern!r} → {rule.replacement!r} is not valid: {err}"
        raise InputError(message, where="rename") from None
    return rule


_LLAMA_LAYER = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
PRESETS: dict[str, tuple[str, ...]] = {
    "gguf-llama": (
        r"^token_embd\.=model.embed_tokens.",
        r"^output_norm\.=model.norm.",
        r"^output\.=lm_head.",
        *(rf"^blk\.(\d+)\.{gguf}\.=model.layers.\1.{hf}." for gguf, hf in _LLAMA_LAYER.items()),
    ),
}
"""Built-in rule lists by name, as ``PATTERN=REPLACEMENT`` texts (``--rename-preset``)."""


def preset(name: str) -> list[Rule]:
    """The rules of the built-in naming ``name``."""
    if name not in PRESETS:
        raise InputError(f"no rename preset is called {name!r}; there are {', '.join(PRESETS)}", where="rename")
    return [parse_rule(text) for text in PRESETS[name]]


def rename(name: str, rules: Sequence[Rule]) -> str:
    """``name`` after every rule in order."""
    for rule in rules:
        name = rule.apply(name)
    return name


def keyed(names: Iterable[str], rules: Sequence[Rule]) -> tuple[dict[str, str], list[tuple[str, list[str]]]]:
    """Each name's key after renaming (key → name), and the keys several names came to.

    Two tensors of one checkpoint renamed alike cannot be told apart, so neither is
    paired; the caller reports them.
    """
    by_key: dict[str, list[str]] = {}
    for name in names:
        by_key.setdefault(rename(name, rules), []).append(name)
    unique = {key: group[0] for key, group in by_key.items() if len(group) == 1}
    clashes = [(key, group) for key, group in by_key.items() if len(group) > 1]
    return unique, clashes
