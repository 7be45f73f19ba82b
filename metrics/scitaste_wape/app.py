"""The metric Space: the shared scitaste-hf metric app over this folder's evaluate module."""

from pathlib import Path

from scitaste_hf.adapters.metrics.app import build_metric_app

demo = build_metric_app(Path(__file__).resolve().parent)

if __name__ == "__main__":
    demo.launch()
