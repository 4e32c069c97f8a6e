"""minitape's benchmark suite: ``python -m benchmarks`` (or ``make bench``).

Contestants: hand-written NumPy (the floor), minitape, and every peer that imports (PyTorch
eager, HIPS autograd, MyGrad, TensorFlow eager, JAX without jit), each behind an adapter in
``benchmarks/adapters/``. Each workload runs in its own process; see ``workloads.py`` for what
is measured and ``README.md`` for the latest numbers.
"""
