"""lsrbench: reproducibility harness for MLM-head rescaling in learned sparse retrieval."""

__version__ = "0.1.0"
