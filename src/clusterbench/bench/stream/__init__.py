"""Memory bandwidth with BabelStream's kernels and definitions (``clusterbench stream``)."""
