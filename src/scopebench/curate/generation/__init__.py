"""The generate step: LLM-written descriptions and questions through cached, resumable calls."""
