"""The tokenizer of a GGUF export: an HF byte-level BPE tokenizer.json (with its special tokens and chat
template) as llama.cpp's gpt2 tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..border.files import read_text
from ._gguf_llama import ExportError, LlamaHparams, read_json

if TYPE_CHECKING:
    from gguf import GGUFWriter

__all__ = ["add_tokenizer"]


def _token_content(value: object) -> str | None:
    """The text of a special token as tokenizer_config.json writes it: a string or an AddedToken {"content": ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return cast("str | None", value)  # as the file has it: a string or null (else it matches no token's text)


def _chat_template(model_dir: Path, tok_config: dict[str, Any]) -> str | None:
    template = tok_config.get("chat_template")
    if isinstance(template, list):  # named templates: [{"name": "default", "template": ...}, ...]
        named = {t.get("name"): t.get("template") for t in template}
        template = named.get("default") or next(iter(named.values()), None)
    if template:
        return cast(str, template)  # tokenizer_config.json's chat_template: a Jinja string
    if (model_dir / "chat_template.jinja").is_file():  # transformers >= 4.50 saves it separately
        return read_text(model_dir / "chat_template.jinja", what="chat template")
    if (model_dir / "chat_template.json").is_file():
        return cast("str | None", read_json(model_dir / "chat_template.json").get("chat_template"))
    return None


def _post_processor_adds(tokenizer: dict[str, Any], token: str | None) -> bool | None:
    """Whether the HF post-processor puts `token` around a single sequence (None: cannot tell)."""
    post = tokenizer.get("post_processor")
    if not post or token is None:
        return None
    processors = post.get("processors", [post]) if post.get("type") == "Sequence" else [post]
    for p in processors:
        if p.get("type") == "TemplateProcessing":
            return any(item.get("SpecialToken", {}).get("id") == token for item in p.get("single", []))
    return None


def add_tokenizer(writer: GGUFWriter, model_dir: Path, hp: LlamaHparams) -> None:
    """Write the tokenizer of `model_dir` (vocabulary, merges, special tokens, chat template) to `writer`."""
    import gguf

    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise ExportError(f"{model_dir} has no tokenizer.json (only fast byte-level BPE tokenizers are supported)")
    tokenizer = read_json(path)
    model = tokenizer.get("model", {})
    pre = tokenizer.get("pre_tokenizer") or {}
    if model.get("type") != "BPE" or pre.get("type") != "ByteLevel" or not pre.get("use_regex", True):
        raise ExportError(
            "only byte-level BPE tokenizers with the GPT-2 pre-tokenizer are supported, got "
            f"model={model.get('type')} pre_tokenizer={pre.get('type')}"
        )
    if tokenizer.get("normalizer"):
        raise ExportError(f"tokenizer normalizers are not supported: {tokenizer['normalizer'].get('type')}")

    tok_config_path = model_dir / "tokenizer_config.json"
    tok_config = read_json(tok_config_path) if tok_config_path.is_file() else {}

    by_id: dict[int, tuple[str, gguf.TokenType]] = {}
    for text, i in model["vocab"].items():
        by_id[i] = (text, gguf.TokenType.NORMAL)
    for added in tokenizer.get("added_tokens", []):
        kind = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
        by_id[added["id"]] = (added["content"], kind)
    n_vocab = max(hp.vocab_size, max(by_id) + 1)
    if n_vocab != hp.vocab_size:
        raise ExportError(f"tokenizer has ids up to {max(by_id)} but the model's vocab_size is {hp.vocab_size}")
    tokens, types = [], []
    for i in range(n_vocab):
        text, kind = by_id.get(i, (f"[PAD{i}]", gguf.TokenType.UNUSED))
        tokens.append(text)
        types.append(kind)

    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)

    ids = {text: i for i, (text, _) in by_id.items()}
    special = {}
    for key in ("bos", "eos", "unk", "pad"):
        text = _token_content(tok_config.get(f"{key}_token"))
        if text is not None and text in ids:
            special[key] = ids[text]
        elif tok_config.get(f"{key}_token") is None and hp.config.get(f"{key}_token_id") is not None:
            value = hp.config[f"{key}_token_id"]
            special[key] = value[0] if isinstance(value, list) else value
    adders = {"bos": writer.add_bos_token_id, "eos": writer.add_eos_token_id,
              "unk": writer.add_unk_token_id, "pad": writer.add_pad_token_id}
    for key, token_id in special.items():
        adders[key](int(token_id))

    bos_text = _token_content(tok_config.get("bos_token"))
    eos_text = _token_content(tok_config.get("eos_token"))
    add_bos = tok_config.get("add_bos_token")
    if add_bos is None:
        add_bos = bool(_post_processor_adds(tokenizer, bos_text))
    add_eos = tok_config.get("add_eos_token")
    if add_eos is None:
        add_eos = bool(_post_processor_adds(tokenizer, eos_text))
    writer.add_add_bos_token(bool(add_bos))
    writer.add_add_eos_token(bool(add_eos))

    template = _chat_template(model_dir, tok_config)
    if template:
        writer.add_chat_template(template)
