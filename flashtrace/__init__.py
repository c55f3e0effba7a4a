"""FlashTrace Studio."""
