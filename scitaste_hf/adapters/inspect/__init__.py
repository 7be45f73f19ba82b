"""SciTaste-Bench as Inspect tasks (the ``inspect`` extra: ``pip install '.[inspect]'`` in the repository): one
task per mode of :data:`scitaste_hf.modes.MODE_SPECS` (:mod:`.tasks`, registered through Inspect's ``inspect_ai``
entry point, so ``inspect eval scitaste_hf/scitaste_dimagent`` finds it), and the reading of an Inspect log as a
run (:mod:`.logs`). The only part of the package that imports ``inspect_ai``; README.md here is the task's card."""
