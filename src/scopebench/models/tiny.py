"""Tiny random-weight contrastive models, built offline from configs.

They exist so the full code path (``save_pretrained`` → ``clip:<folder>`` → processor → model) can
be exercised with no network and no weights to download: in tests, in the offline demo (labelled
*untrained*: they show the pipeline, not a score) and in ``bench/`` (at ViT-B/32 size).
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any, Literal

__all__ = ["build_tiny_bert", "build_tiny_clip", "build_tokenizer"]

_CORPUS = (
    "a an the of in on with and or to is are this that image micrograph microscopy cell cells nucleus "
    "nuclei tissue stain stained light fluorescence electron brightfield phase contrast confocal h&e "
    "dab giemsa dapi gfp none above below which what how many round elongated smooth irregular fine "
    "coarse texture shape contour colocalization partial strong no panel bar value highest lowest "
    "control drug treated pathology cytology blood lymphocyte neutrophil tumor stroma gland mitosis "
    "option answer question acquired obtained through sample showing figure"
)


def build_tokenizer(
    vocab_size: int = 400, *, bos: str = "<|startoftext|>", eos: str = "<|endoftext|>", pad: str = "<pad>"
) -> Any:
    """A small byte-free BPE tokenizer trained on a fixed corpus (deterministic), wrapped for transformers.

    Every printable ASCII character is in the vocabulary, so any English text tokenizes without
    unknown tokens; sequences get ``bos … eos`` so CLIP-style pooling at the EOS token works.
    """
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[pad, "<unk>", bos, eos],
        initial_alphabet=list(string.printable.strip()),
        show_progress=False,
    )
    words = _CORPUS.split(" ")
    corpus = [" ".join(words[i : i + 12]) for i in range(0, len(words), 3)] * 3
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", special_tokens=[(bos, tok.token_to_id(bos)), (eos, tok.token_to_id(eos))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        unk_token="<unk>",
        model_max_length=64,
    )


def build_tiny_clip(
    out_dir: Path,
    *,
    kind: Literal["clip", "siglip"] = "clip",
    seed: int = 0,
    size: Literal["tiny", "base"] = "tiny",
) -> Path:
    """Build a random-weight CLIP or SigLIP model + processor and save it to ``out_dir``.

    Args:
        out_dir: Folder to write (``save_pretrained`` layout, loadable with ``clip:<folder>``).
        kind: ``clip`` (CLIPModel) or ``siglip`` (SiglipModel).
        seed: Weight-initialisation seed (the same seed gives identical weights).
        size: ``tiny`` (hidden 32, 2 layers, 32 px) or ``base`` (ViT-B/32 dimensions, 224 px), for
            benchmarks that need realistic compute.

    Returns:
        ``out_dir``.
    """
    import torch
    from transformers import CLIPConfig, CLIPModel, SiglipConfig, SiglipModel

    out_dir = Path(out_dir)
    tokenizer = build_tokenizer()
    eos_id = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
    pad_id = tokenizer.pad_token_id
    bos_id = tokenizer.convert_tokens_to_ids(tokenizer.bos_token)
    if size == "base":
        text = dict(hidden_size=512, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=8)
        vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12)
        image_size, patch, proj = 224, 32, 512
    else:
        text = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
        vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
        image_size, patch, proj = 32, 8, 16
    text.update(vocab_size=len(tokenizer), max_position_embeddings=64, eos_token_id=eos_id,
                bos_token_id=bos_id, pad_token_id=pad_id)  # fmt: skip
    vision.update(image_size=image_size, patch_size=patch)
    torch.manual_seed(seed)
    if kind == "clip":
        from transformers import CLIPImageProcessorPil, CLIPProcessor

        model: Any = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=proj))
        image_processor: Any = CLIPImageProcessorPil(
            size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
        )
        processor: Any = CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer)
    else:
        from transformers import SiglipImageProcessorPil, SiglipProcessor

        model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision))
        image_processor = SiglipImageProcessorPil(size={"height": image_size, "width": image_size})
        processor = SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer)
    model.eval()
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def build_tiny_bert(out_dir: Path, *, seed: int = 0, with_nsp_head: bool = True) -> Path:
    """Build a random-weight BERT with a next-sentence-prediction head + WordPiece tokenizer.

    The vocabulary is every printable ASCII character (also as a ``##`` continuation) plus the
    words of a fixed corpus, so any English text tokenizes without unknown tokens; the tokenizer is
    transformers' own ``BertTokenizer`` (``[CLS] a [SEP] b [SEP]`` pairs with token type ids).

    Args:
        out_dir: Folder to write (``save_pretrained`` layout, loadable with ``nsp:<folder>``).
        seed: Weight-initialisation seed (the same seed gives identical weights).
        with_nsp_head: Save ``BertForNextSentencePrediction`` (default); ``False`` saves a bare
            ``BertModel``, a checkpoint whose NSP head is missing.

    Returns:
        ``out_dir``.
    """
    import torch
    from transformers import BertConfig, BertForNextSentencePrediction, BertModel, BertTokenizer

    out_dir = Path(out_dir)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [c for c in string.printable.strip() if not c.isupper()]
    words = sorted({w for w in _CORPUS.split() if w.isalpha()})
    tokens = list(dict.fromkeys([*specials, *chars, *(f"##{c}" for c in chars), *words]))
    tokenizer = BertTokenizer(vocab={t: i for i, t in enumerate(tokens)}, do_lower_case=True)
    tokenizer.model_max_length = 64
    config = BertConfig(
        vocab_size=len(tokens),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=0,
        # 10x BERT's 0.02: untrained weights then give options clearly different IsNext
        # probabilities (≈0.70–0.85 instead of 0.50 ± 0.005), so tests can tell them apart.
        initializer_range=0.2,
    )
    torch.manual_seed(seed)
    model: Any = BertForNextSentencePrediction(config) if with_nsp_head else BertModel(config)
    model.eval()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
