"""Tiny random-weight contrastive and generative models, built offline from configs.

They exist so the full code path (``save_pretrained`` → ``clip:<folder>`` / ``hf:<folder>`` →
processor → model) can be exercised with no network and no weights to download: in tests, in the
offline demo (labelled *untrained*: they show the pipeline, not a score) and in ``bench/`` (at
ViT-B/32 or Qwen2-VL-like sizes).
"""

from __future__ import annotations

import importlib.util
import json
import string
from pathlib import Path
from typing import Any, Literal

from scopebench.models.hf_processor import build_images_only_processor

__all__ = [
    "GENERATIVE_FAMILIES",
    "build_chat_tokenizer",
    "build_tiny_bert",
    "build_tiny_clip",
    "build_tiny_generative",
    "build_tokenizer",
]

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


# Tiny generative VLMs ------------------------------------------------------------------------------
#
# One builder per family the ``hf:`` backend supports, each saving model + processor (with the
# family's own chat template, or none for PaliGemma) so ``hf:<folder>`` loads them through
# AutoProcessor / AutoModelForImageTextToText exactly as it loads a real checkpoint.

GenerativeFamily = Literal[
    "qwen2-vl", "qwen2.5-vl", "llava", "llava-next", "paligemma", "idefics3", "smolvlm"
]

#: Families :func:`build_tiny_generative` can build.
GENERATIVE_FAMILIES: tuple[str, ...] = (
    "qwen2-vl",
    "qwen2.5-vl",
    "llava",
    "llava-next",
    "paligemma",
    "idefics3",
    "smolvlm",
)

# Simplified versions of each family's published chat template (same turn markers and image
# placement), written here because the real ones ship with weights we cannot download.
_QWEN2_VL_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] == 'text' %}{{ content['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_LLAVA_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}"
    "{{ message['role'].upper() + ': ' }}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}"
    "{% endfor %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] + ' ' }}{% endfor %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)
_IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

# Text the generative tokenizer is trained on: the corpus above plus prompt words and option
# labels, so " A" and "A" both become single tokens (as in GPT-2/Qwen byte-level vocabularies).
_PROMPT_CORPUS = (
    "Question: Options: Answer with the letter of the correct option only. The answer is "
    "A) B) C) D) E) F) (A) (B) (C) (D) (1) (2) (3) (4) A B C D E F G H 1 2 3 4 5 6 7 8 "
    "user assistant system USER: ASSISTANT: User: Assistant: detect segment"
)


def build_chat_tokenizer(
    special_tokens: list[str],
    *,
    bos: str | None = None,
    eos: str = "<|im_end|>",
    pad: str = "<pad>",
    vocab_size: int = 600,
) -> Any:
    """A byte-level BPE tokenizer (cased, GPT-2/Qwen style) with a family's special tokens.

    Unlike :func:`build_tokenizer` it keeps case and spaces, so decoded text reads back exactly and
    ``" A"`` and ``"A"`` are *different* single tokens — the case the log-prob mode must handle.

    Args:
        special_tokens: Family tokens (image placeholders, turn markers) added as special tokens.
        bos: Beginning-of-sequence token, if the family uses one.
        eos: End-of-sequence token (generation stops there).
        pad: Padding token.
        vocab_size: Target vocabulary size before the special tokens.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = [pad, eos] + ([bos] if bos else [])
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    words = (_CORPUS + " " + _PROMPT_CORPUS).split(" ")
    corpus = [" ".join(words[i : i + 12]) for i in range(0, len(words), 3)] * 3
    tok.train_from_iterator(corpus, trainer=trainer)
    out = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=eos, pad_token=pad, bos_token=bos, model_max_length=4096
    )
    out.add_special_tokens({"additional_special_tokens": list(special_tokens)})
    return out


def _text_dims(hidden: int, layers: int, vocab: int) -> dict[str, Any]:
    heads = max(2, hidden // 32)
    return dict(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=4096,
    )


def build_tiny_generative(
    out_dir: Path,
    family: GenerativeFamily,
    *,
    seed: int = 0,
    hidden: int = 64,
    layers: int = 1,
    image_size: int = 56,
    size: Literal["tiny", "small", "2b"] = "tiny",
) -> Path:
    """Build a random-weight image-text-to-text model + processor of ``family``; save it to ``out_dir``.

    Args:
        out_dir: Folder to write (``save_pretrained`` layout, loadable with ``hf:<folder>``).
        family: ``qwen2-vl``, ``qwen2.5-vl``, ``llava`` (LLaVA-1.5), ``llava-next`` (LLaVA-NeXT,
            any-resolution tiles), ``paligemma``, ``idefics3`` or ``smolvlm``.
        seed: Weight-initialisation seed (the same seed gives identical weights).
        hidden: Hidden size of the language model (the vision tower uses 32).
        layers: Language-model layers (the vision tower has one).
        image_size: Input image side in pixels (a multiple of 28).
        size: ``tiny`` (the arguments above), or for ``qwen2-vl`` only a realistic preset that
            overrides them: ``small`` (hidden 256, 4 layers, 224 px; CPU benchmarks) or ``2b``
            (Qwen2-VL-2B's dimensions, 448 px; GPU benchmarks, saved in bfloat16).

    Returns:
        ``out_dir``.
    """
    import torch

    builders = {
        "qwen2-vl": _tiny_qwen2_vl,
        "qwen2.5-vl": _tiny_qwen2_5_vl,
        "llava": _tiny_llava,
        "llava-next": _tiny_llava_next,
        "smolvlm": _tiny_smolvlm,
        "paligemma": _tiny_paligemma,
        "idefics3": _tiny_idefics3,
    }
    if family not in builders:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(GENERATIVE_FAMILIES)}")
    if size != "tiny" and family != "qwen2-vl":
        raise ValueError(f"size {size!r} exists only for qwen2-vl")
    out_dir = Path(out_dir)
    torch.manual_seed(seed)
    if family == "qwen2-vl":
        model, processor = _tiny_qwen2_vl(hidden, layers, image_size, size)
    else:
        model, processor = builders[family](hidden, layers, image_size)
    if size == "2b":
        model = model.to(torch.bfloat16)  # 4.4 GB on disk instead of 8.8
    model.eval()
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    if family in ("qwen2-vl", "qwen2.5-vl"):
        # Write the video processor entry a real Qwen2-VL folder has, whether or not the stand-in
        # of a torchvision-less machine was used, so the folder loads the same everywhere.
        cfg_path = out_dir / "processor_config.json"
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        ip = processor.image_processor
        cfg["video_processor"] = {
            "video_processor_type": "Qwen2VLVideoProcessor",
            "merge_size": ip.merge_size,
            "patch_size": ip.patch_size,
            "temporal_patch_size": ip.temporal_patch_size,
        }
        cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    return out_dir


# Realistic sizes of the Qwen2-VL builder, for bench/ (random weights, real compute).
_QWEN2_VL_SIZES: dict[str, dict[str, Any]] = {
    # "small": a CPU-benchmark model, far from trivial: a 4-layer, 256-wide decoder with Qwen2-VL's
    # real 151,936-entry vocabulary (tied input/output embeddings, as in Qwen2-VL-2B), ~45 M parameters.
    "small": {
        "text": dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=151936),
        "vision": dict(embed_dim=128, depth=2, num_heads=4),
        "image_size": 224,
    },
    # "2b": Qwen2-VL-2B-Instruct's published dimensions (config.json of Qwen/Qwen2-VL-2B-Instruct).
    "2b": {
        "text": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                     num_key_value_heads=2, vocab_size=151936),
        "vision": dict(embed_dim=1280, depth=32, num_heads=16),
        "image_size": 448,
    },
}  # fmt: skip


def _tiny_qwen2_vl(hidden: int, layers: int, image_size: int, size: str = "tiny") -> tuple[Any, Any]:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = build_chat_tokenizer(
        ["<|im_start|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"],
        eos="<|im_end|>",
    )
    ids = {
        t: tok.convert_tokens_to_ids(t)
        for t in ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")
    }
    text = _text_dims(hidden, layers, len(tok))
    vision_dims: dict[str, Any] = dict(depth=1, embed_dim=32, num_heads=2)
    if size != "tiny":
        preset = _QWEN2_VL_SIZES[size]
        text.update(preset["text"])
        vision_dims = dict(preset["vision"])
        image_size = preset["image_size"]
    hidden = text["hidden_size"]
    head_dim = hidden // text["num_attention_heads"]
    # M-RoPE splits each head's rotary half into temporal/height/width sections (Qwen2-VL: 16/24/24
    # of 64); keep the same proportions.
    half = head_dim // 2
    temporal = half // 4
    height = (half - temporal) // 2
    mrope = [temporal, height, half - temporal - height]
    text.update(
        rope_parameters={"rope_type": "default", "mrope_section": mrope},
        bos_token_id=None,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = dict(
        **vision_dims,
        hidden_size=hidden,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
    )
    config = Qwen2VLConfig(
        tie_word_embeddings=size != "tiny",
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    model = Qwen2VLForConditionalGeneration(config)
    image_processor = Qwen2VLImageProcessorPil(
        size={"shortest_edge": 28 * 28, "longest_edge": image_size * image_size},
        patch_size=14,
        merge_size=2,
        temporal_patch_size=2,
    )
    if importlib.util.find_spec("torchvision") is not None:
        # The video processor is passed explicitly: transformers before ~5.20 refuse None for it.
        from transformers import Qwen2VLVideoProcessor

        video = Qwen2VLVideoProcessor(patch_size=14, merge_size=2, temporal_patch_size=2)
        processor = Qwen2VLProcessor(
            image_processor=image_processor,
            tokenizer=tok,
            video_processor=video,
            chat_template=_QWEN2_VL_TEMPLATE,
        )
    else:
        # Without torchvision transformers cannot build Qwen2-VL's video processor; the saved folder
        # is the same apart from the video processor's entry (rewritten in build_tiny_generative).

        processor = build_images_only_processor(
            Qwen2VLProcessor, image_processor, tok, chat_template=_QWEN2_VL_TEMPLATE
        )
    return model, processor


def _tiny_qwen2_5_vl(hidden: int, layers: int, image_size: int) -> tuple[Any, Any]:
    """Qwen2.5-VL: Qwen2-VL's text model and processor, a windowed-attention vision tower."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor

    model, qwen2 = _tiny_qwen2_vl(hidden, layers, image_size)
    cfg = model.config
    vision = dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=hidden, patch_size=14,
        spatial_merge_size=2, temporal_patch_size=2, window_size=56, fullatt_block_indexes=[1],
    )  # fmt: skip
    config = Qwen2_5_VLConfig(
        text_config=cfg.text_config.to_dict(),
        vision_config=vision,
        image_token_id=cfg.image_token_id,
        video_token_id=cfg.video_token_id,
        vision_start_token_id=cfg.vision_start_token_id,
        vision_end_token_id=cfg.vision_end_token_id,
    )
    model = Qwen2_5_VLForConditionalGeneration(config)
    tok, image_processor = qwen2.tokenizer, qwen2.image_processor
    if importlib.util.find_spec("torchvision") is not None:
        processor = Qwen2_5_VLProcessor(
            image_processor=image_processor,
            tokenizer=tok,
            video_processor=qwen2.video_processor,
            chat_template=_QWEN2_VL_TEMPLATE,
        )
    else:
        processor = build_images_only_processor(
            Qwen2_5_VLProcessor, image_processor, tok, chat_template=_QWEN2_VL_TEMPLATE
        )
    return model, processor


def _tiny_llava(hidden: int, layers: int, image_size: int) -> tuple[Any, Any]:
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    tok = build_chat_tokenizer(["<image>"], bos="<s>", eos="</s>")
    patch = 14
    text = _text_dims(hidden, layers, len(tok))
    text.update(
        model_type="llama",
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = dict(
        model_type="clip_vision_model",
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch,
    )
    n_patches = (image_size // patch) ** 2
    config = LlavaConfig(
        text_config=text,
        vision_config=vision,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_seq_length=n_patches,
        vision_feature_select_strategy="default",  # LLaVA-1.5: drop CLS, keep every patch
        vision_feature_layer=-2,
    )
    model = LlavaForConditionalGeneration(config)
    image_processor = LlavaImageProcessorPil(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}, do_pad=True
    )
    # LLaVA's processor expands <image> into one token per patch; it needs the vision tower's patch
    # size and whether CLS is kept (num_additional_image_tokens=1 for CLIP's CLS, dropped by "default").
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_LLAVA_TEMPLATE,
    )
    return model, processor


def _tiny_llava_next(hidden: int, layers: int, image_size: int) -> tuple[Any, Any]:
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextProcessor
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    tok = build_chat_tokenizer(["<image>"], bos="<s>", eos="</s>")
    patch, tile = 14, image_size // 2
    # Any-resolution: the image is cut into tiles of the vision tower's size on the best-fitting
    # grid among these pinpoints, plus a downscaled view of the whole image.
    pinpoints = [[tile, tile], [tile, 2 * tile], [2 * tile, tile], [2 * tile, 2 * tile]]
    text = _text_dims(hidden, layers, len(tok))
    text.update(
        model_type="llama",
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = dict(
        model_type="clip_vision_model",
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=tile,
        patch_size=patch,
    )
    config = LlavaNextConfig(
        text_config=text,
        vision_config=vision,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
    )
    model = LlavaNextForConditionalGeneration(config)
    image_processor = LlavaNextImageProcessorPil(
        size={"shortest_edge": tile},
        crop_size={"height": tile, "width": tile},
        image_grid_pinpoints=pinpoints,
    )
    processor = LlavaNextProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_LLAVA_TEMPLATE,
    )
    return model, processor


def _tiny_paligemma(hidden: int, layers: int, image_size: int) -> tuple[Any, Any]:
    from transformers import PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    tok = build_chat_tokenizer(["<image>"], bos="<bos>", eos="<eos>")
    patch = 14
    n_patches = (image_size // patch) ** 2
    image_processor: Any = SiglipImageProcessorPil(size={"height": image_size, "width": image_size})
    image_processor.image_seq_length = n_patches  # PaliGemma's processor reads it from here
    # The processor adds PaliGemma's 1024 <locNNNN> and 128 <segNNN> tokens to the tokenizer, so it
    # is built before the model to size the vocabulary. PaliGemma has no chat template.
    processor = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)
    vocab = len(processor.tokenizer)
    text = _text_dims(hidden, layers, vocab)
    text.update(
        model_type="gemma",
        head_dim=hidden // text["num_attention_heads"],
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = dict(
        model_type="siglip_vision_model",
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch,
        projection_dim=hidden,
    )
    config = PaliGemmaConfig(
        text_config=text,
        vision_config=vision,
        image_token_index=processor.image_token_id,
        vocab_size=vocab,
        projection_dim=hidden,
        hidden_size=hidden,
    )
    model = PaliGemmaForConditionalGeneration(config)
    return model, processor


def _tiny_idefics3(hidden: int, layers: int, image_size: int) -> tuple[Any, Any]:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    grid = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    tok = build_chat_tokenizer(
        ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>", *grid],
        bos="<|im_start|>",
        eos="<end_of_utterance>",
    )
    patch, scale = 14, 2
    tile = image_size // 2  # images larger than a tile are split into tiles plus a global view
    seq_len = (tile // patch) ** 2 // scale**2
    text = _text_dims(hidden, layers, len(tok))
    text.update(
        model_type="llama",
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=tile,
        patch_size=patch,
    )
    config = Idefics3Config(
        text_config=text,
        vision_config=vision,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        scale_factor=scale,
    )
    model = Idefics3ForConditionalGeneration(config)
    image_processor = Idefics3ImageProcessorPil(
        size={"longest_edge": image_size}, max_image_size={"longest_edge": tile}, do_image_splitting=True
    )
    processor = Idefics3Processor(
        image_processor=image_processor,
        tokenizer=tok,
        image_seq_len=seq_len,
        chat_template=_IDEFICS3_TEMPLATE,
    )
    return model, processor


def _tiny_smolvlm(hidden: int, layers: int, image_size: int) -> tuple[Any, Any]:
    """SmolVLM: Idefics3's layout with its own processor (which also carries a video processor)."""
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMProcessor
    from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil

    idefics, idefics_proc = _tiny_idefics3(hidden, layers, image_size)
    cfg = idefics.config
    config = SmolVLMConfig(
        text_config=cfg.text_config.to_dict(),
        vision_config=cfg.vision_config.to_dict(),
        image_token_id=cfg.image_token_id,
        scale_factor=cfg.scale_factor,
    )
    model = SmolVLMForConditionalGeneration(config)
    tile = image_size // 2
    image_processor = SmolVLMImageProcessorPil(
        size={"longest_edge": image_size}, max_image_size={"longest_edge": tile}, do_image_splitting=True
    )
    kwargs = dict(image_seq_len=idefics_proc.image_seq_len, chat_template=_IDEFICS3_TEMPLATE)
    if importlib.util.find_spec("torchvision") is not None:
        from transformers import SmolVLMVideoProcessor

        processor = SmolVLMProcessor(
            image_processor=image_processor,
            tokenizer=idefics_proc.tokenizer,
            video_processor=SmolVLMVideoProcessor(),
            **kwargs,
        )
    else:
        processor = build_images_only_processor(
            SmolVLMProcessor, image_processor, idefics_proc.tokenizer, **kwargs
        )
    return model, processor
