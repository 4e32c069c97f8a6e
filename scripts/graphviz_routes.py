"""Measure minitape's two ways of rendering a drawing: speed and determinism.

    python scripts/graphviz_routes.py

For each route that exists here (pygraphviz in-process, the `dot` program), renders two
tapes (a 3-op tape; a two-layer network's training step) to SVG and PNG 15 times and prints
the median time and how many distinct outputs the 15 renders gave (1: deterministic). Run it
twice to compare across processes (the printed digests). minitape/viz/render.py records the
result and the choice it led to.
"""

import hashlib
import os
import shutil
import statistics
import time

import minitape as mt
from minitape.viz import draw_tape
from minitape.viz.render import render_dot


def small():
    x = mt.Variable(3.0, name="x")
    with mt.GradientTape() as tape:
        y = x * x
        z = mt.math.sin(y)
    tape.gradient(z, x)
    return draw_tape(tape, z, x)


def network():
    mt.random.set_seed(0)
    model = mt.keras.Sequential([mt.keras.layers.Dense(8, activation="relu"),
                                 mt.keras.layers.Dense(3)])
    x = mt.random.normal((4, 5))
    with mt.GradientTape() as tape:
        loss = mt.reduce_mean(model(x) ** 2)
    tape.gradient(loss, model.trainable_variables)
    return draw_tape(tape, loss, model.trainable_variables)


def main():
    routes = []
    try:
        import pygraphviz  # noqa: F401
        routes.append("pygraphviz")
    except ImportError:
        pass
    if shutil.which("dot"):
        routes.append("dot")
    for name, make in [("3-op tape", small), ("two-layer network", network)]:
        source = make().source
        for fmt in ("svg", "png"):
            for route in routes:
                os.environ["MINITAPE_GRAPHVIZ"] = route
                render_dot(source, fmt)     # warm up (imports, fontconfig)
                times, digests = [], set()
                for _ in range(15):
                    start = time.perf_counter()
                    out = render_dot(source, fmt)
                    times.append(time.perf_counter() - start)
                    digests.add(hashlib.sha1(out).hexdigest()[:10])
                print(f"{name:18} {fmt} {route:10} median {statistics.median(times) * 1e3:6.1f} ms"
                      f"  distinct outputs: {len(digests)} ({', '.join(sorted(digests))})")


if __name__ == "__main__":
    main()
