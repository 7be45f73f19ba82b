"""The Academic Taste Index engine (docs/index-dimensions.md, docs/weights.md).

:class:`Population` is the input, :func:`compute_index` scores it, :class:`CitationGraph` computes CD indices,
:mod:`~scitaste_hf.index.weights` derives and recovers weight vectors. scikit-learn and the embedders are
imported only when used.
"""

from scitaste_hf.index.cd import CDResult, CitationGraph
from scitaste_hf.index.embed import Embedder, SentenceTransformerEmbedder, WordLlamaEmbedder
from scitaste_hf.index.engine import compute_index, work_embeddings
from scitaste_hf.index.journals import JournalEntry, JournalTable
from scitaste_hf.index.population import Embeddings, Population

__all__ = [
    "CDResult",
    "CitationGraph",
    "Embedder",
    "Embeddings",
    "JournalEntry",
    "JournalTable",
    "Population",
    "SentenceTransformerEmbedder",
    "WordLlamaEmbedder",
    "compute_index",
    "work_embeddings",
]
