"""The ingest step: sources → one standardised dataset.

PNG images, hashes, validated metadata and near-duplicate groups (:mod:`.step`).
"""
