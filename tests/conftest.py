"""Test-wide settings: no test may reach the internet, and Hugging Face caches stay inside the test run."""

import os
import tempfile

# Set before any test imports datasets/evaluate/huggingface_hub, which read these at import time.
_CACHE = tempfile.mkdtemp(prefix="scitaste-hf-tests-")
os.environ.setdefault("HF_HOME", _CACHE)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_EVALUATE_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ.pop("HF_TOKEN", None)
