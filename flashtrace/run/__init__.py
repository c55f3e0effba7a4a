"""Run floor: turning a model and text into a `Trace` (`tracing`), tracing many prompts (`batch`, on Ray
with `distributed`), and the benchmark cells (`bench`)."""
