"""The evaluation's method names, importable without torch (the command line's help lists them);
`methods.EVAL_METHODS` holds what each one runs."""

DEFAULT_METHODS = ("flashtrace-k0", "flashtrace-k1", "flashtrace-k2", "ifr", "attention", "rollout", "ig",
                   "perturbation")

__all__ = ["DEFAULT_METHODS"]
