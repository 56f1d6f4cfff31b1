"""Encoding a corpus and its queries into SPLADE vectors, in resumable shards, stored as sparse ``.npz``
files."""
