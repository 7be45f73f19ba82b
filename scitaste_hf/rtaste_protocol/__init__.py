"""rTaste as a protocol that runs: the study folder and its stages (propose, seal, judge, rerun, release).

:mod:`scitaste_hf.rtaste` scores a release; this unit produces one. Each stage reads the study folder
(:mod:`~scitaste_hf.rtaste_protocol.study`), writes its own files there atomically, and can be run, resumed and
replaced on its own. It sits above :mod:`scitaste_hf.agent` because the stages that ask a model go through the
agent's chat client (docs/rtaste-protocol.md).
"""
