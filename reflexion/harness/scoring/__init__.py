"""How the benchmarks score a finished thread: programming's hidden tests and pass@1
(``programming``), ALFWorld's games won and failure classes (``alfworld``)."""
