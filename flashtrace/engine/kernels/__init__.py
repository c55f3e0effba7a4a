"""The engine's CPU kernels (numba), below both the recording and the attribution maths: the one-pass
softmax over rebuilt attention rows (`softmax`) and the proximity kernels with their warm-up
(`proximity`)."""
