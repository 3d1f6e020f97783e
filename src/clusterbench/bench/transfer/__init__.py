"""Copy bandwidth between host memory and devices (``clusterbench transfer``)."""
