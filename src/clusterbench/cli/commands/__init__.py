"""One module per command (or command group); each exposes ``commands``."""
