"""Embedding models: which model a vault uses, loading it (fastembed or the
bundled MiniLM on onnxruntime), the content-hash cache, and each model's
measured thresholds. See docs/models.md."""
