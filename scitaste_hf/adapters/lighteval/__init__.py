"""SciTaste-Bench as lighteval custom tasks (:mod:`.tasks`), for lighteval's classic backends (``lighteval
endpoint litellm``, ``lighteval accelerate``, ``lighteval vllm``) with ``--custom-tasks
scitaste_hf.adapters.lighteval.tasks``. lighteval 0.13's ``lighteval eval`` (its inspect-ai backend) reads no custom
tasks: there, run the Inspect tasks (:mod:`scitaste_hf.adapters.inspect`) with ``inspect eval``. The only part of the
package that imports ``lighteval``."""
