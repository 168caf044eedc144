"""What a traced kernel is, read without running it: ``analysis`` (index maps, TPU
lowering, VMEM, structure), ``facts`` (their answers, typed; no JAX), ``blockmap``
(block indices over the grid; numpy only), ``outside`` (the allow-list for work outside
a kernel), ``cost`` and ``stepwork`` (what each grid step costs, for the estimate).
"""
