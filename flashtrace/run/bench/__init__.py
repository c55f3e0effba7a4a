"""Speed and memory benchmarks: FlashTrace vs token-wise IFR vs one plain forward pass.

Each cell runs in its own process (`flashtrace.run.bench.cell`) so its peak resident memory is its own.
"""
