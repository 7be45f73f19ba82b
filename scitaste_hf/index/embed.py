"""Document embedders for dimension C. Any object with ``embed(texts) -> (n, d) array`` will do.

The default, :class:`WordLlamaEmbedder`, is a static token-embedding model whose weights ship inside the
``wordllama`` wheel on PyPI, so it runs with no network and no model download. SPECTER2 (or any
sentence-transformers model the user has locally) plugs in through :class:`SentenceTransformerEmbedder`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from scitaste_hf.errors import ScitasteError


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into document vectors; the index only compares them by cosine distance."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into an array of shape (len(texts), d).

        Parameters
        ----------
        texts : sequence of str
            Non-empty documents, typically title and abstract.
        """


class WordLlamaEmbedder:
    """The offline default: WordLlama's ``l2_supercat`` static embeddings, bundled in the ``wordllama`` wheel.

    Parameters
    ----------
    dim : {64, 128, 256}
        Embedding size: the wheel ships the 256-dimensional model, whose leading components (it is trained as
        a Matryoshka embedding) give the smaller sizes.
    batch_size : int
        Texts per batch.
    """

    def __init__(self, dim: int = 256, batch_size: int = 512) -> None:
        self.dim = dim
        self.batch_size = batch_size
        self._model = None

    def _load(self):
        # Importing wordllama configures the root logger (INFO, a stderr handler): every library's INFO lines
        # would then reach the user's terminal. The application's logging is put back as it was.
        root = logging.getLogger()
        level, handlers = root.level, root.handlers[:]
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError:
            raise ScitasteError("the default embedder needs wordllama: pip install 'wordllama>=0.4'") from None
        finally:
            root.setLevel(level)
            root.handlers[:] = handlers
        # The wheel keeps its weights under weights/ and tokenizers/ of the package folder, which is the layout
        # WordLlama expects of a cache directory; pointing the cache there and disabling downloads keeps it
        # offline (its own lookup of the package folder misses the tokenizer file).
        try:
            return WordLlama.load(dim=256, trunc_dim=None if self.dim == 256 else self.dim,
                                  cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        except (FileNotFoundError, ValueError) as exc:
            raise ScitasteError(f"the bundled WordLlama model could not be loaded: {exc}") from None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into unit vectors of shape (len(texts), dim); an empty text gives a zero vector.

        Parameters
        ----------
        texts : sequence of str
            Documents, typically title and abstract.
        """
        if self._model is None:
            self._model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.embed(list(texts), norm=True, batch_size=self.batch_size)
        # In place: the array is ours, and a copy would double the largest allocation of the index.
        return np.nan_to_num(np.asarray(vectors, dtype=np.float32), copy=False)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model, for example SPECTER2 (``allenai/specter2_base``) when installed locally.

    Parameters
    ----------
    model : str
        Model name or local path, passed to ``sentence_transformers.SentenceTransformer``.
    batch_size : int
        Texts per batch.
    device : str, optional
        Torch device; sentence-transformers chooses when None.
    """

    def __init__(self, model: str = "allenai/specter2_base", batch_size: int = 64, device: str | None = None):
        self.model = model
        self.batch_size = batch_size
        self.device = device
        self._model = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into unit vectors of shape (len(texts), d).

        Parameters
        ----------
        texts : sequence of str
            Documents, typically title and abstract (SPECTER2 expects ``title + [SEP] + abstract``).
        """
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise ScitasteError("SentenceTransformerEmbedder needs sentence-transformers: "
                                    "pip install sentence-transformers") from None
            try:
                self._model = SentenceTransformer(self.model, device=self.device)
            except OSError as exc:
                raise ScitasteError(f"sentence-transformers model {self.model!r} is not available: {exc}") from None
        vectors = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32)
