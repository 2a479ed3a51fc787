"""How the benchmarks score a finished thread: programming's hidden tests and pass@1
(``programming``), ALFWorld's games won and failure classes (``alfworld``), answers matched to
a task's reference beside the evaluator's verdict (``reference``)."""
