"""The lm-eval adapter: the task hooks (:mod:`.tasks`), the task class (:mod:`.chat_task`), the ``scitaste-*``
models (:mod:`.models`) and the run entry (:mod:`.run`)."""
