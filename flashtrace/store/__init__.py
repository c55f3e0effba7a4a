"""Storage floor: the trace library and its index, the packaged gallery, where the app's files are."""
